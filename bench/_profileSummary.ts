/**
 * Self and inclusive CPU time of a .cpuprofile (node --cpu-prof) by function and by package, over
 * a window of the profile's clock (monotonic µs, as bench/push-fleet.ts prints it with
 * BENCH_PROF_DIR). Packages: node_modules/<name>, src/<dir>, node: internals, (gc), (program).
 * Frames of the minified bundle (dist/cli) are read through its linked source maps, so a profile of
 * the verifier users run names the same files and lines as one run through tsx. "By
 * part" sorts self time into the parts of a push attestation (Effect's runtime, SQLite's native
 * statements, node's HTTP/TLS, the push route and documents, ...); PER=<n> divides by n
 * (attestations in the window) to print ms each.
 *
 *   node --import tsx bench/_profileSummary.ts <file.cpuprofile> [startUs endUs] [top=40]
 */
import { existsSync, readFileSync } from "node:fs"
import { SourceMap } from "node:module"
import { fileURLToPath } from "node:url"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const [file, from, to, topText] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(file!, "utf8")) as Profile
const start = from === undefined ? -Infinity : Number(from)
const end = to === undefined ? Infinity : Number(to)
const top = Number(topText ?? 40)

// the bundle's frames, mapped to their sources (file, line, and the original name where it has one)
const maps = new Map<string, SourceMap | undefined>()
const mapOf = (url: string): SourceMap | undefined => {
  if (!maps.has(url)) {
    const file = url.startsWith("file://") ? fileURLToPath(url) : url
    maps.set(url, existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8"))) : undefined)
  }
  return maps.get(url)
}
const originalOf = (n: Node): Node => {
  const f = n.callFrame
  if (!/\/dist[^/]*\/cli\/[^/]+\.js$/.test(f.url)) return n
  const entry = mapOf(f.url)?.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string; originalLine?: number; name?: string } | undefined
  if (entry?.originalSource === undefined) return n
  const url = entry.originalSource.replace(/^(\.\.\/)+/, "/")
  return { ...n, callFrame: { functionName: entry.name ?? f.functionName, url, lineNumber: entry.originalLine ?? 0, columnNumber: 0 } }
}

const byId = new Map(profile.nodes.map((n) => [n.id, originalOf(n)]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

const packageOf = (url: string, name: string): string => {
  if (url === "") return name.startsWith("(") ? name : "(native)"
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm !== null) return nm[1]!
  if (url.startsWith("node:")) return "node:" + url.slice(5).split("/")[0]
  const own = /\/(src|layers|schemas|bench|test)\/([^/]+)/.exec(url)
  if (own !== null) return own[2]!.endsWith(".ts") ? own[1]! : `${own[1]}/${own[2]}`
  return url
}
const labelOf = (n: Node): string => {
  const f = n.callFrame
  const short = f.url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(src|layers|schemas|bench)\//, "$1/")
  return `${f.functionName || "(anonymous)"} ${short}:${f.lineNumber + 1}`
}

/** The part of the verifier a leaf frame's self time belongs to. */
const PARTS: ReadonlyArray<readonly [string, (url: string, name: string) => boolean]> = [
  ["garbage collector", (_, name) => name === "(garbage collector)"],
  ["effect runtime", (url) => /node_modules\/effect\//.test(url)],
  ["SQLite statements (native, under the client's runStatement)", (url) => /@effect\/sql-sqlite-node\//.test(url)],
  ["@effect/sql, @effect/platform", (url) => /@effect\/(sql|platform)\//.test(url)],
  ["evaluation (evaluate, tpm, ima, policy)", (url) => /\/src\/(verifier\/evaluate|verifier\/policy|tpm|ima)\//.test(url)],
  ["push route, documents, rendering, auth", (url) => /\/src\/(verifier\/push\/(directRoutes|documents|render|Http|auth|time)|http\/)/.test(url)],
  ["push domain (Attestations, repo, negotiate, Sessions)", (url) => /\/src\/verifier\/push\//.test(url)],
  ["node HTTP, TLS and streams", (url, name) => /^node:(_http|net|_tls|events|internal\/(streams|stream_base|http))/.test(url) || name === "writev" || name === "writeUtf8String" || name === "writeBuffer"],
  ["node crypto", (url, name) => url.startsWith("node:internal/crypto") || name === "verifyOneShot"]
]
const partOf = (url: string, name: string): string => PARTS.find(([, test]) => test(url, name))?.[0] ?? "other"
const parts = new Map<string, number>()

const self = new Map<string, number>()
const inclusive = new Map<string, number>()
const pkgSelf = new Map<string, number>()
const pkgInclusive = new Map<string, number>()
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v)

let t = profile.startTime
let total = 0
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!
  if (t < start || t > end) continue
  // a sample stands for the time to the next one
  const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000
  const leaf = byId.get(profile.samples[i]!)!
  if (leaf.callFrame.functionName === "(idle)") continue
  total += dt
  add(self, labelOf(leaf), dt)
  add(pkgSelf, packageOf(leaf.callFrame.url, leaf.callFrame.functionName), dt)
  add(parts, partOf(leaf.callFrame.url, leaf.callFrame.functionName), dt)
  const seen = new Set<string>()
  const seenPkg = new Set<string>()
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const n = byId.get(id)!
    const label = labelOf(n)
    if (!seen.has(label)) {
      seen.add(label)
      add(inclusive, label, dt)
    }
    const pkg = packageOf(n.callFrame.url, n.callFrame.functionName)
    if (!seenPkg.has(pkg)) {
      seenPkg.add(pkg)
      add(pkgInclusive, pkg, dt)
    }
  }
}

const show = (title: string, m: Map<string, number>, n: number) => {
  console.log(`\n== ${title}`)
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(`${v.toFixed(0).padStart(8)} ms ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
  }
}
console.log(`busy CPU in window: ${total.toFixed(0)} ms`)
const per = Number(process.env["PER"] ?? 0)
if (per > 0) {
  console.log(`\n== by part, ms per each of ${per}`)
  for (const [k, v] of [...parts].sort((a, b) => b[1] - a[1])) console.log(`${(v / per).toFixed(3).padStart(8)} ms ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
} else {
  show("self by part", parts, PARTS.length + 1)
}
show("self by package", pkgSelf, 25)
show("inclusive by package", pkgInclusive, 25)
show("self by function", self, top)
show("inclusive by function", inclusive, top)

// FOCUS=<regex>: the heaviest call paths (nearest 12 frames, outside effect's runtime) through matching frames
const focus = process.env["FOCUS"]
if (focus !== undefined) {
  const re = new RegExp(focus)
  const paths = new Map<string, number>()
  let t2 = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    t2 += profile.timeDeltas[i]!
    if (t2 < start || t2 > end) continue
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000
    const chain: Array<string> = []
    let hit = false
    for (let id: number | undefined = profile.samples[i]!; id !== undefined; id = parent.get(id)) {
      const n = byId.get(id)!
      const label = labelOf(n)
      if (re.test(label)) hit = true
      if (hit && !/effect\/dist|^\(root\)|node:internal\/process|runMicrotasks/.test(label)) chain.push(label)
      if (chain.length >= 12) break
    }
    if (hit) add(paths, chain.join("\n      <- "), dt)
  }
  show(`paths through /${focus}/`, paths, 15)
}
