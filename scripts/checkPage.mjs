// The "check it yourself" page (src/dashboard/static/check.html + src/dashboard/check/page.ts):
// the page's code bundled for browsers with esbuild (platform browser, no Node built-in allowed)
// as check.js beside the dashboard's assets, and one self-contained HTML file with the styles and
// the code inline, which works offline opened from disk (file://). Called by scripts/bundle.mjs;
// `node scripts/checkPage.mjs <assets dir> <offline file>` builds the two alone.
import { build } from "esbuild"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { isBuiltin } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const staticDir = join(root, "src/dashboard/static")

/** Fails the build on any import of a Node built-in: the page must run in a browser. */
const noNodeBuiltins = {
  name: "no-node-builtins",
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.path.startsWith("node:") || isBuiltin(args.path)) {
        return { errors: [{ text: `${args.importer} imports the Node built-in ${args.path}: the check page runs in a browser` }] }
      }
      return undefined
    })
  }
}

/** The page's script, minified: its text and esbuild's metafile. */
export const bundleCheckScript = async () => {
  const r = await build({
    entryPoints: [join(root, "src/dashboard/check/page.ts")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "inline",
    metafile: true,
    plugins: [noNodeBuiltins],
    logLevel: "warning"
  })
  return { code: r.outputFiles[0].text, metafile: r.metafile }
}

/** The offline page: check.html with the dashboard's styles and the script inline. */
export const offlinePage = (code) => {
  const css = readFileSync(join(staticDir, "style.css"), "utf8") + readFileSync(join(staticDir, "check.css"), "utf8")
  return readFileSync(join(staticDir, "check.html"), "utf8")
    .replace('<link rel="stylesheet" href="/assets/style.css">\n', "")
    .replace('<link rel="stylesheet" href="/assets/check.css">', () => `<style>\n${css}</style>`)
    // a classic script: file:// pages cannot load modules; `</script` inside the code is escaped
    .replace('<script src="/assets/check.js" defer></script>', () => `<script>${code.replace(/<\/script/gi, "<\\/script")}</script>`)
    .replace('<a class="brand" href="/">attest</a>', '<span class="brand">attest</span>')
}

/** Writes check.js into `assetsDir` and the offline page to `offlineFile`. */
export const buildCheckPage = async (assetsDir, offlineFile) => {
  const { code } = await bundleCheckScript()
  mkdirSync(assetsDir, { recursive: true })
  writeFileSync(join(assetsDir, "check.js"), code)
  mkdirSync(dirname(offlineFile), { recursive: true })
  writeFileSync(offlineFile, offlinePage(code))
  return { bytes: code.length }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [assetsDir = "dist/cli/dashboard", offlineFile = "dist/attest-check.html"] = process.argv.slice(2)
  const { bytes } = await buildCheckPage(assetsDir, offlineFile)
  console.error(`attest: check page ${join(assetsDir, "check.js")} (${Math.round(bytes / 1024)} kB) and ${offlineFile}`)
}
