import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { decodeRuntimePolicyJson } from "../../schemas/RuntimePolicy.js"
import { type CompiledRuntimePolicy, compileRuntimePolicyDocument, type RuntimePolicyError } from "../../src/ima/compileDocument.js"
import { loadRuntimePolicy } from "../../src/ima/load.js"
import { policyDigestHexStart } from "../../src/ima/nameTable.js"
import { newAllows, oldAllows, oldCompile, tableOf } from "./tables.js"

const hexOf = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => Buffer.from(b).toString("hex"))
const validDigest = fc.oneof(
  fc.constantFrom(16, 20, 32, 48, 64).chain(hexOf),
  fc.constantFrom(20, 32).chain(hexOf).map((h) => `sha256:${h}`),
  // odd length: allowed by Keylime's pattern, matches no entry
  hexOf(20).map((h) => h + "a")
)
const badDigest = fc.oneof(
  hexOf(32).map((h) => h.toUpperCase()),
  hexOf(8),
  hexOf(32).map((h) => h.slice(0, 10) + "g" + h.slice(11)),
  hexOf(32).map((h) => `:${h}`),
  hexOf(32).map((h) => `sha-256:${h}`)
)
const nameArb = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^\/[a-z0-9/._-]{1,30}$/) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('/a"b', "/a\\b", "/a\nb", "/é", "/中文", "/\u2028", "__proto__", "", "0", "constructor") }
)
const ws = fc.constantFrom("", "", " ", "\n", "\t", "\r\n  ")

/** A JSON text built token by token, so that names can repeat and whitespace varies. */
const mapText = (entries: Array<[string, Array<unknown>]>, w: Array<string>) =>
  `{${w[0]}${entries.map(([n, ds], i) => `${JSON.stringify(n)}${w[(i + 1) % w.length]}:${w[i % w.length]}[${ds.map((d) => JSON.stringify(d)).join(`,${w[i % w.length]}`)}]`).join(`,${w[1]}`)}${w[2]}}`

/** null nine times in ten. */
const rarely = <A>(a: fc.Arbitrary<A>) => fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: a })

const entriesArb = (digest: fc.Arbitrary<unknown>) =>
  fc.array(fc.tuple(nameArb, fc.array(digest, { minLength: 1, maxLength: 3 })), { maxLength: 12 })

const documentArb = fc
  .record({
    digests: entriesArb(fc.oneof({ weight: 60, arbitrary: validDigest }, { weight: 1, arbitrary: badDigest }, { weight: 1, arbitrary: fc.constantFrom(7, null, "") })),
    keyrings: entriesArb(validDigest),
    imaBuf: entriesArb(validDigest),
    emptyList: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
    w: fc.array(ws, { minLength: 3, maxLength: 3 }),
    drop: rarely(fc.constantFrom("meta", "ima", "digests", "excludes")),
    extra: rarely(fc.constantFrom('"x": 1', '"digests": {}', '"meta": {"version": 2}', '"payload": ""', '"__proto__": {}')),
    generator: fc.option(fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 4, 1.5) })),
    excludes: fc.array(fc.oneof({ weight: 9, arbitrary: fc.constantFrom("/proc/.*", "/tmp/(?P<x>a|b)", "x") }, { weight: 1, arbitrary: fc.constant("/bad(") }), { maxLength: 2 }),
    mapKind: fc.oneof({ weight: 18, arbitrary: fc.constant("object") }, { weight: 1, arbitrary: fc.constantFrom("array", "string") }),
    cut: rarely(fc.nat())
  })
  .map((d) => {
    const digests = d.mapKind === "object" ? mapText(d.emptyList ? [["/empty", []], ...d.digests] : d.digests, d.w) : d.mapKind === "array" ? "[]" : '"nope"'
    const fields: Array<[string, string]> = [
      ["meta", JSON.stringify({ version: 1, ...(d.generator === null ? {} : { generator: d.generator }) })],
      ["release", "0"],
      ["digests", digests],
      ["excludes", JSON.stringify(d.excludes)],
      ["keyrings", mapText(d.keyrings, d.w)],
      ["ima", '{"ignored_keyrings": [], "log_hash_alg": "sha256", "dm_policy": null}'],
      ["ima-buf", mapText(d.imaBuf, d.w)],
      ["verification-keys", '""']
    ]
    const kept = fields.filter(([k]) => k !== d.drop).map(([k, v]) => `${JSON.stringify(k)}:${d.w[1]}${v}`)
    if (d.extra !== null) kept.push(d.extra)
    const text = `${d.w[2]}{${kept.join(`,${d.w[0]}`)}}${d.w[1]}`
    return d.cut === null ? text : text.slice(0, d.cut % (text.length + 1))
  })

/** What a result says, as plain data. */
const outcome = (r: Either.Either<CompiledRuntimePolicy, RuntimePolicyError>) =>
  Either.isLeft(r)
    ? { kind: r.left.kind, path: r.left.path, reason: r.left.kind === "NotJson" ? "" : r.left.reason }
    : {
        digests: tableOf(r.right.policy.digests),
        keyrings: tableOf(r.right.policy.keyrings),
        imaBuf: tableOf(r.right.policy.imaBuf),
        sizes: [r.right.policy.digests.size, r.right.policy.keyrings.size, r.right.policy.imaBuf.size],
        exclude: r.right.policy.exclude?.source,
        meta: r.right.meta,
        generator: r.right.generator,
        hasRuntimePolicy: r.right.hasRuntimePolicy
      }

/** The general path: JSON.parse, then the Schema-decoded structure and the per-field compile. */
const generalPath = (text: string) => {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch {
    return { kind: "NotJson", path: "", reason: "" }
  }
  return outcome(compileRuntimePolicyDocument(doc))
}

describe("loadRuntimePolicy on random documents", () => {
  it("the one-pass scan gives exactly the general path's result or error", () => {
    fc.assert(
      fc.property(documentArb, (text) => {
        const doc = (() => {
          try {
            return JSON.parse(text) as unknown
          } catch {
            return undefined
          }
        })()
        // An envelope goes the DSSE way; its payload is compared below through the same scan.
        fc.pre(!(typeof doc === "object" && doc !== null && Boolean((doc as { payload?: unknown }).payload)))
        expect(outcome(loadRuntimePolicy(text))).toEqual(generalPath(text))
      }),
      { numRuns: 1000 }
    )
  })

  it("accepts and refuses what the Schema decode did, and allows the same (name, digest) pairs as the previous compile", () => {
    // "__proto__" is left out: the Schema decode set it as the prototype and lost the name (the loader keeps it, as Keylime's dict does).
    const policyArb = fc.record({
      entries: fc.array(fc.tuple(nameArb.filter((n) => n !== "__proto__"), fc.array(fc.oneof({ weight: 20, arbitrary: validDigest }, { weight: 1, arbitrary: badDigest }), { minLength: 1, maxLength: 3 })), {
        maxLength: 30
      }),
      probes: fc.array(fc.constantFrom(16, 20, 32, 64).chain(hexOf), { maxLength: 5 })
    })
    fc.assert(
      fc.property(policyArb, ({ entries, probes }) => {
        const text = JSON.stringify({
          meta: { version: 1 },
          release: 0,
          digests: Object.fromEntries(entries),
          excludes: [],
          keyrings: {},
          ima: { ignored_keyrings: [], log_hash_alg: "sha1", dm_policy: null },
          "ima-buf": {},
          "verification-keys": ""
        })
        const old = decodeRuntimePolicyJson(text)
        const loaded = loadRuntimePolicy(text)
        expect(Either.isRight(loaded)).toBe(Either.isRight(old))
        if (Either.isLeft(old) || Either.isLeft(loaded)) return
        const table = loaded.right.policy.digests
        const oracle = oldCompile(old.right.digests)
        expect(tableOf(table).map(([n]) => n)).toEqual([...oracle.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
        const listed = [...oracle.values()].flatMap((s) => [...s]).filter((d) => d.length % 2 === 0)
        for (const name of [...oracle.keys(), "/not/listed"]) {
          for (const hex of [...listed, ...probes, ...listed.map((d) => d.toUpperCase())]) {
            expect(newAllows(table, name, hex), `${name} ${hex}`).toBe(oldAllows(oracle, name, hex.toLowerCase()))
          }
        }
      }),
      { numRuns: 400 }
    )
  })

  it("the digest check is Keylime's pattern", () => {
    const pattern = /^(?:[a-z0-9_]+:)?[0-9a-f]{32,128}$/
    const chars = fc.constantFrom(..."0123456789abcdefABCDEFgz:_-".split(""))
    fc.assert(
      fc.property(fc.oneof(fc.array(chars, { maxLength: 140 }).map((a) => a.join("")), fc.tuple(fc.stringMatching(/^[a-z0-9_]{0,8}$/), fc.integer({ min: 28, max: 132 })).map(([p, n]) => `${p}:${"a".repeat(n)}`)), (s) => {
        expect(policyDigestHexStart(s) >= 0).toBe(pattern.test(s))
      }),
      { numRuns: 3000 }
    )
  })
})
