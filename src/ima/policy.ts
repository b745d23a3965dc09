/**
 * A runtime policy compiled once per policy (not per attestation): each digest map becomes a
 * NameTable (flat arrays, digests as bytes) and the excludes one anchored RegExp, so the per-entry
 * check is a hash probe and a byte compare. `loadRuntimePolicy` (load.ts) is the path from upload
 * text; `compilePolicy` takes an already decoded RuntimePolicy.
 */
import { Data, Either } from "effect"
import type { RuntimePolicy } from "../../schemas/RuntimePolicy.js"
import type { HashAlg } from "./hash.js"
import { type DigestSet, NameTable } from "./nameTable.js"
import { type ImaKeyring, keyringFromJson } from "./signatures.js"

export class PolicyCompileError extends Data.TaggedError("PolicyCompileError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `runtime policy ${this.field}: ${this.reason}`
  }
}

export type { DigestSet } from "./nameTable.js"
export type DigestLookup = NameTable

/** Whether the lower-case hex digest is in the set (tools and tests; the engine compares bytes). */
export const digestAllowed = (set: DigestSet, hex: string): boolean => (typeof set === "string" ? set === hex : set.has(hex))

export interface CompiledPolicy {
  readonly digests: DigestLookup
  readonly keyrings: DigestLookup
  readonly imaBuf: DigestLookup
  /** One RegExp for all excludes, anchored at the start like Python's re.match; undefined when none. */
  readonly exclude: RegExp | undefined
  readonly ignoredKeyrings: ReadonlySet<string>
  readonly logHashAlg: HashAlg
  /** Keys from the policy's `verification-keys`. */
  readonly verificationKeys: ImaKeyring
}

// Digests may carry an "alg:" prefix (seen on boot_aggregate in Keylime's signed vector); Keylime
// compares bare hex, so the table drops it.
const toTable = (rec: Readonly<Record<string, ReadonlyArray<string>>>): NameTable => NameTable.fromEntries(Object.entries(rec))

/** Python regex syntax that JavaScript spells differently. */
const fromPython = (re: string): string => re.replace(/\(\?P</g, "(?<").replace(/\(\?P=(\w+)\)/g, "\\k<$1>")

/** Combined exclude RegExp, or the index and reason of the first that does not compile. */
export const compileExcludes = (
  excludes: ReadonlyArray<string>
): Either.Either<RegExp | undefined, { readonly index: number; readonly reason: string }> => {
  const parts: Array<string> = []
  for (const [index, e] of excludes.entries()) {
    const src = fromPython(e)
    try {
      new RegExp(src)
    } catch (err) {
      return Either.left({ index, reason: `'${e}' is not a valid regular expression (${String(err)})` })
    }
    parts.push(`(?:${src})`)
  }
  if (parts.length === 0) return Either.right(undefined)
  try {
    // Named groups repeated across excludes would clash when joined; fall back to stripping names.
    return Either.right(new RegExp(`^(?:${parts.join("|")})`))
  } catch {
    return Either.right(new RegExp(`^(?:${parts.map((p) => p.replace(/\(\?<[A-Za-z_]\w*>/g, "(")).join("|")})`))
  }
}

export const compilePolicy = (policy: RuntimePolicy): Either.Either<CompiledPolicy, PolicyCompileError> => {
  const ex = compileExcludes(policy.excludes)
  if (Either.isLeft(ex)) return Either.left(new PolicyCompileError({ field: `excludes[${ex.left.index}]`, reason: ex.left.reason }))
  const keys = keyringFromJson(policy["verification-keys"])
  if (Either.isLeft(keys)) return Either.left(new PolicyCompileError({ field: "verification-keys", reason: keys.left }))
  return Either.right({
    digests: toTable(policy.digests),
    keyrings: toTable(policy.keyrings),
    imaBuf: toTable(policy["ima-buf"]),
    exclude: ex.right,
    ignoredKeyrings: new Set(policy.ima.ignored_keyrings),
    logHashAlg: policy.ima.log_hash_alg,
    verificationKeys: keys.right
  })
}
