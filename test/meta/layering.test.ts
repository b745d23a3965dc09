/**
 * The shape of the source tree (issue 23 §2), read from the sources themselves: every relative
 * specifier of `import … from`, `import type … from`, `export … from`, `import "…"` and `import("…")`
 * under src/.
 * (a) No import cycle among the top-level folders of src/: a cycle ties every folder on it into one
 *     component that cannot be understood, tested or reused alone. A failure lists the arrows of each cycle with the files that make them.
 * (b) Inside src/verifier imports go only downward, http → {pull, push, stateless} → domain, and
 *     src/attestation (the evaluator, configuration and state names) imports only the engines;
 *     the verifier's root holds only its assembly (Server.ts, fromConfig.ts, index.ts).
 * (c) No file under src/ over 400 lines (docs/architecture.md: one concern per file).
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"

const root = resolve(__dirname, "../..")

const sourcesUnder = (dir: string): Array<string> =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourcesUnder(join(dir, e.name)) : /\.(ts|mts|js|mjs)$/.test(e.name) ? [join(dir, e.name)] : []
  )

// A comment line (JSDoc ` * …` or `// …`) is not code, even when it shows an import.
const COMMENT_LINE = /^\s*(?:\*|\/\/|\/\*).*$/gm
const SPECIFIER = /(?:^|[^\w.$])(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g

interface Arrow {
  /** repository-relative paths, "/"-separated */
  readonly from: string
  readonly to: string
}

const posix = (p: string) => p.split(sep).join("/")

const arrows: ReadonlyArray<Arrow> = sourcesUnder("src").flatMap((file) => {
  const code = readFileSync(join(root, file), "utf8").replace(COMMENT_LINE, "")
  return [...code.matchAll(SPECIFIER)].map((m) => ({
    from: posix(file),
    to: posix(relative(root, resolve(root, dirname(file), m[1]!)))
  }))
})

/** The top-level folder of src/ a path is in, or undefined outside src/. */
const componentOf = (path: string): string | undefined => {
  const [top, folder, rest] = path.split("/")
  return top === "src" && rest !== undefined ? folder : undefined
}

/** Strongly connected components with more than one member (Tarjan). */
const cycles = (edges: ReadonlyMap<string, ReadonlySet<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const out: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        component.push(w)
      } while (w !== v)
      if (component.length > 1) out.push(component.sort())
    }
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return out
}

const describeArrow = (a: Arrow) => `${a.from} → ${a.to}`

describe("source layering", () => {
  it("(a) has no import cycle among the top-level folders of src/", () => {
    const edges = new Map<string, Set<string>>()
    const byEdge = new Map<string, Array<Arrow>>()
    for (const a of arrows) {
      const from = componentOf(a.from)
      const to = componentOf(a.to)
      if (from === undefined || to === undefined || from === to) continue
      edges.set(from, (edges.get(from) ?? new Set()).add(to))
      const key = `${from} -> ${to}`
      byEdge.set(key, [...(byEdge.get(key) ?? []), a])
    }
    const offending = cycles(edges).map((component) => ({
      cycle: component.join(" "),
      arrows: [...byEdge].filter(([key]) => key.split(" -> ").every((c) => component.includes(c)))
        .map(([key, list]) => `${key}: ${list.map(describeArrow).join("; ")}`)
    }))
    expect(offending).toEqual([])
  })

  it("(b) imports inside src/verifier go only downward: http → pull, push, stateless → domain", () => {
    const floor: Record<string, number> = { http: 3, pull: 2, push: 2, stateless: 2, domain: 1 }
    const verifierPlace = (path: string) => {
      const parts = path.split("/")
      if (parts[0] !== "src" || parts[1] !== "verifier") return undefined
      return parts.length === 3 ? "root" : parts[2]!
    }
    const upward = arrows.filter((a) => {
      const from = verifierPlace(a.from)
      const to = verifierPlace(a.to)
      if (from === undefined || to === undefined || from === to || from === "root") return false
      return to === "root" || !(floor[from]! > floor[to]!)
    }).map(describeArrow)
    const places = new Set(sourcesUnder("src/verifier").map((f) => posix(f).split("/").slice(2)).map((p) => (p.length === 1 ? p[0] : `${p[0]}/`)))
    expect({ upward, places: [...places].sort() }).toEqual({
      upward: [],
      places: ["Server.ts", "domain/", "fromConfig.ts", "http/", "index.ts", "pull/", "push/", "stateless/"]
    })
  })

  it("(b) src/attestation imports only the engines beneath it", () => {
    const engines = new Set(["attestation", "tpm", "ima", "boot", "tee", "crypto", "pki", "keys"])
    const beyond = arrows.filter((a) => componentOf(a.from) === "attestation" && a.to.startsWith("src/") && !engines.has(componentOf(a.to) ?? ""))
      .map(describeArrow)
    expect(beyond).toEqual([])
  })

  it("(c) has no file under src/ over 400 lines", () => {
    /** Longer files, each with why it stays whole (keep this short). */
    const allowed: Record<string, string> = {}
    const long = sourcesUnder("src").map(posix)
      .map((file) => ({ file, lines: readFileSync(join(root, file), "utf8").replace(/\n$/, "").split("\n").length }))
      .filter(({ file, lines }) => lines > 400 && !(file in allowed))
      .map(({ file, lines }) => `${file}: ${lines} lines`)
    expect(long).toEqual([])
  })
})
