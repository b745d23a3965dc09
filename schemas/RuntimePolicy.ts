/**
 * Keylime runtime policy v1 (keylime/ima/ima.py RUNTIME_POLICY_SCHEMA), the legacy allowlist text
 * format (`<digest>  <path>` lines) and the old JSON allowlist, both converted to v1.
 */
import { Either, ParseResult, Schema } from "effect"

export const RUNTIME_POLICY_VERSION = 1

/** Keylime's generator enum: Unknown=0, EmptyAllowList=1, CompatibleAllowList=2, LegacyAllowList=3. */
export const Generator = { Unknown: 0, EmptyAllowList: 1, CompatibleAllowList: 2, LegacyAllowList: 3 } as const

export const LogHashAlg = Schema.Literal("sha1", "sha256", "sha384", "sha512")
export type LogHashAlg = typeof LogHashAlg.Type

// Keylime's pattern is ^[0-9a-f]{40,128}$; real policies (the signed vector) also carry an "alg:" prefix
// on boot_aggregate, and md5 (32 hex) digests appear in old lists, so both are accepted here.
const DIGEST = /^(?:[a-z0-9_]+:)?[0-9a-f]{32,128}$/

export const PolicyDigest = Schema.String.pipe(
  Schema.filter((s) => DIGEST.test(s), { message: (s) => `digest ${JSON.stringify(s.actual)} is not lower-case hex of 16 to 64 bytes` })
)

/** path (or keyring / buffer name) → allowed digests (at least one). */
export const DigestMap = Schema.Record({
  key: Schema.String,
  value: Schema.Array(PolicyDigest).pipe(Schema.minItems(1))
})
export type DigestMap = typeof DigestMap.Type

export const RuntimePolicyMeta = Schema.Struct({
  version: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  generator: Schema.optional(Schema.Int.pipe(Schema.between(0, 3))),
  timestamp: Schema.optional(Schema.String)
})

export const RuntimePolicyIma = Schema.Struct({
  ignored_keyrings: Schema.Array(Schema.String),
  log_hash_alg: LogHashAlg,
  dm_policy: Schema.NullOr(Schema.Unknown)
})

export class RuntimePolicy extends Schema.Class<RuntimePolicy>("RuntimePolicy")({
  meta: RuntimePolicyMeta,
  release: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  digests: DigestMap,
  excludes: Schema.Array(Schema.String),
  keyrings: DigestMap,
  ima: RuntimePolicyIma,
  "ima-buf": DigestMap,
  "verification-keys": Schema.String
}) {}

export type RuntimePolicyEncoded = typeof RuntimePolicy.Encoded

/** The top-level fields in the order Keylime's JSON schema requires them (its first missing one is the one reported). */
export const RUNTIME_POLICY_REQUIRED = ["meta", "release", "digests", "excludes", "keyrings", "ima", "ima-buf", "verification-keys"] as const

/**
 * A digest map checked only for being an object: its values (up to millions of digests) are checked
 * and compiled in one pass by the loader (src/ima/load.ts), which names the bad entry's path as this
 * schema would, without building a decoded copy of every array.
 */
export const DigestMapObject = Schema.declare(
  (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u),
  { identifier: "DigestMap", message: () => "expected an object of name → [digest, …]" }
)

/** RuntimePolicy with the digest maps left to the loader: what an upload is decoded with. */
export const RuntimePolicyStructure = Schema.Struct({
  meta: RuntimePolicyMeta,
  release: Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)),
  digests: DigestMapObject,
  excludes: Schema.Array(Schema.String),
  keyrings: DigestMapObject,
  ima: RuntimePolicyIma,
  "ima-buf": DigestMapObject,
  "verification-keys": Schema.String
})
export type RuntimePolicyStructure = typeof RuntimePolicyStructure.Type

/** What Keylime stores when no policy is given. */
export const emptyRuntimePolicy = (): RuntimePolicyEncoded => ({
  meta: { version: RUNTIME_POLICY_VERSION, generator: Generator.EmptyAllowList },
  release: 0,
  digests: {},
  excludes: [],
  keyrings: {},
  ima: { ignored_keyrings: [], log_hash_alg: "sha1", dm_policy: null },
  "ima-buf": {},
  "verification-keys": ""
})

/** JSON text → RuntimePolicy (ParseError names the field). */
export const RuntimePolicyFromJson = Schema.parseJson(RuntimePolicy)
export const decodeRuntimePolicyJson = Schema.decodeUnknownEither(RuntimePolicyFromJson)
export const decodeRuntimePolicy = Schema.decodeUnknownEither(RuntimePolicy)
export const encodeRuntimePolicy = Schema.encodeSync(RuntimePolicy)

/** `ima_sign_verification_keys` / `verification-keys`: keylime/ima/file_signatures.py IMA_KEYRING_JSON_SCHEMA. */
export const ImaKeyringJson = Schema.Struct({
  meta: Schema.Struct({ version: Schema.Int }),
  keyids: Schema.optional(Schema.Array(Schema.Int)),
  pubkeys: Schema.Array(Schema.String)
})
export type ImaKeyringJson = typeof ImaKeyringJson.Type
export const decodeImaKeyringJson = Schema.decodeUnknownEither(Schema.parseJson(ImaKeyringJson))

// ---------------------------------------------------------------------------------------------
// Legacy formats

export interface AllowlistLineError {
  readonly line: number
  readonly message: string
}

const HEX = /^[0-9a-fA-F]+$/

/**
 * Legacy allowlist text: `<hex digest><whitespace><path>` per line, `#` comments and blank lines
 * skipped. Paths may contain spaces (only the first run of whitespace separates). Returns the
 * digests map or the first bad line.
 */
export const parseAllowlistText = (text: string): Either.Either<Record<string, Array<string>>, AllowlistLineError> => {
  const digests: Record<string, Array<string>> = {}
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, "")
    const trimmed = line.trim()
    if (trimmed === "" || trimmed.startsWith("#")) continue
    const m = /^(\S+)\s+(.+)$/.exec(trimmed)
    if (m === null) return Either.left({ line: i + 1, message: "expected '<digest>  <path>'" })
    const digest = m[1]!.toLowerCase()
    // "sha256:<hex>" appears for boot_aggregate in Keylime's own allowlists; the hex part is checked.
    const bareHex = digest.slice(digest.indexOf(":") + 1)
    if (!HEX.test(bareHex) || bareHex.length < 32 || bareHex.length > 128 || bareHex.length % 2 !== 0) {
      return Either.left({ line: i + 1, message: `'${m[1]}' is not a hex digest` })
    }
    // Keylime's allowlists name files relative to / sometimes; keep what is written.
    const path = m[2]!
    const list = (digests[path] ??= [])
    if (!list.includes(digest)) list.push(digest)
  }
  return Either.right(digests)
}

/** Old JSON allowlist (`{"meta": {...}, "hashes": {path: [digest]}}`, keylime test-data/files/allowlist.json). */
export const LegacyJsonAllowlist = Schema.Struct({
  meta: Schema.optional(Schema.Unknown),
  release: Schema.optional(Schema.Int),
  hashes: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) })
})

export interface PolicyParts {
  readonly digests?: Record<string, ReadonlyArray<string>>
  readonly excludes?: ReadonlyArray<string>
  readonly keyrings?: Record<string, ReadonlyArray<string>>
  readonly logHashAlg?: LogHashAlg
  readonly generator?: number
  readonly timestamp?: string
}

/** Build a v1 policy from parts, merging duplicate digests. */
export const makeRuntimePolicy = (parts: PolicyParts): RuntimePolicyEncoded => {
  const base = emptyRuntimePolicy()
  const merge = (into: Record<string, Array<string>>, from: Record<string, ReadonlyArray<string>> | undefined) => {
    if (from === undefined) return
    for (const [k, v] of Object.entries(from)) {
      const list = (into[k] ??= [])
      for (const d of v) if (!list.includes(d)) list.push(d)
    }
  }
  const digests: Record<string, Array<string>> = {}
  merge(digests, parts.digests)
  const keyrings: Record<string, Array<string>> = {}
  merge(keyrings, parts.keyrings)
  return {
    ...base,
    meta: {
      version: RUNTIME_POLICY_VERSION,
      generator: parts.generator ?? Generator.LegacyAllowList,
      ...(parts.timestamp === undefined ? {} : { timestamp: parts.timestamp })
    },
    digests,
    excludes: [...(parts.excludes ?? [])],
    keyrings,
    ima: { ignored_keyrings: [], log_hash_alg: parts.logHashAlg ?? "sha1", dm_policy: null }
  }
}

/** Legacy allowlist text → v1 policy. */
export const runtimePolicyFromAllowlistText = (
  text: string,
  excludes: ReadonlyArray<string> = []
): Either.Either<RuntimePolicyEncoded, AllowlistLineError> =>
  Either.map(parseAllowlistText(text), (digests) =>
    makeRuntimePolicy({ digests, excludes, generator: Generator.CompatibleAllowList })
  )

/** Old JSON allowlist text → v1 policy. */
export const runtimePolicyFromLegacyJson = (
  text: string
): Either.Either<RuntimePolicyEncoded, ParseResult.ParseError> =>
  Either.map(Schema.decodeUnknownEither(Schema.parseJson(LegacyJsonAllowlist))(text), (old) =>
    makeRuntimePolicy({
      digests: Object.fromEntries(
        Object.entries(old.hashes).map(([p, ds]) => [p, ds.map((d) => d.toLowerCase())])
      ),
      generator: Generator.LegacyAllowList
    })
  )
