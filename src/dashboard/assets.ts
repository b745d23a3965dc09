/**
 * The page's static files (HTML, CSS, JS modules), shipped in the package: beside this module when
 * run from source (`src/dashboard/static/`), `dist/cli/dashboard/` in the esbuild bundle
 * (scripts/bundle.mjs copies them; chunks live in dist/cli/). Read once at start; nothing is
 * fetched from the network.
 */
import { Data, Effect } from "effect"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { extname, join } from "node:path"
import { fileURLToPath } from "node:url"

export class AssetsMissing extends Data.TaggedError("AssetsMissing")<{ readonly message: string }> {}

export interface Asset {
  readonly contentType: string
  readonly body: Buffer
}

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml"
}

const candidates = (): Array<string> => [
  fileURLToPath(new URL("./static/", import.meta.url)),
  fileURLToPath(new URL("./dashboard/", import.meta.url))
]

/** name (e.g. `app.js`) → asset, for every file of the first directory that holds index.html. */
export const loadAssets: Effect.Effect<ReadonlyMap<string, Asset>, AssetsMissing> = Effect.suspend(() => {
  const dir = candidates().find((d) => existsSync(join(d, "index.html")))
  if (dir === undefined) {
    return Effect.fail(new AssetsMissing({ message: `dashboard assets not found (looked in ${candidates().join(", ")})` }))
  }
  const out = new Map<string, Asset>()
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)]
    if (type !== undefined) out.set(name, { contentType: type, body: readFileSync(join(dir, name)) })
  }
  return Effect.succeed(out)
})
