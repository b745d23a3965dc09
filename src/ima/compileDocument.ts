/**
 * A parsed runtime-policy document → CompiledPolicy in one pass. Schema decodes the structure (meta,
 * release, excludes, ima, verification-keys, and that each digest map is an object); the digests,
 * nearly all of the document, are checked and packed into the name tables by one tight loop that
 * names the path of a bad one as the schema would. Decoding every digest through a generic codec
 * first cost four times the JSON parse and built a second copy of the document.
 */
import { Data, Either, ParseResult, Schema } from "effect"
import { Generator, RUNTIME_POLICY_REQUIRED, RuntimePolicyStructure } from "../../schemas/RuntimePolicy.js"
import { DIGEST_RULE, type NameTable, NameTableBuilder } from "./nameTable.js"
import { type CompiledPolicy, compileExcludes } from "./policy.js"
import type { DigestMapField } from "./scanPolicy.js"
import { keyringFromJson } from "./signatures.js"

export type { DigestMapField } from "./scanPolicy.js"

export type RuntimePolicyErrorKind =
  /** The text (or a DSSE payload) is not JSON. */
  | "NotJson"
  /** JSON that is not a runtime policy: `path` and `reason` say where and why. */
  | "Malformatted"
  /** A signature was required (or a key given) and the policy is not a DSSE envelope. */
  | "NotSigned"
  /** The envelope does not verify with the given key, or the key is unusable. */
  | "SignatureInvalid"
  /** A signature is required and no key was given. */
  | "KeyMissing"

/** Keylime's texts (keylime/ima/ima.py `ImaValidationError`), which the verifier answers with. */
const KEYLIME_TEXT: Record<Exclude<RuntimePolicyErrorKind, "Malformatted">, string> = {
  NotJson: "Runtime policy is not valid JSON!",
  NotSigned: "Runtime policy is not signed!",
  SignatureInvalid: "Runtime policy failed DSSE signature verification!",
  KeyMissing: "Runtime policy signature verification required but no key was given!"
}

/** Why a runtime policy was refused. The HTTP layer picks the status from `kind` (401 for the signature kinds). */
export class RuntimePolicyError extends Data.TaggedError("RuntimePolicyError")<{
  readonly kind: RuntimePolicyErrorKind
  /**
   * JSON path of the offending value (`digests["/usr/bin/bash"][0]`, `meta.version`, `excludes[2]`),
   * or of the object missing a property; "" for the document itself.
   */
  readonly path: string
  readonly reason: string
}> {
  /** Keylime's text; a malformatted policy's names the path and the reason. */
  override get message(): string {
    if (this.kind !== "Malformatted") return KEYLIME_TEXT[this.kind]
    return `Runtime policy is malformatted: ${this.path === "" ? this.reason : `${this.path}: ${this.reason}`}`
  }
}

export const malformatted = (path: string, reason: string) => new RuntimePolicyError({ kind: "Malformatted", path, reason })

/** A compiled document with the facts the verifier stores beside it. */
export interface CompiledRuntimePolicy {
  readonly policy: CompiledPolicy
  readonly meta: { readonly version: number; readonly generator?: number | undefined; readonly timestamp?: string | undefined }
  readonly release: number
  /** `meta.generator`, Unknown (0) when absent, as Keylime stores it. */
  readonly generator: number
  /** Keylime's `has_runtime_policy`: generator > EmptyAllowList. */
  readonly hasRuntimePolicy: boolean
  /** Names in `digests`, `keyrings` and `ima-buf`. */
  readonly names: number
}

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/

/** `ima.log_hash_alg`, `digests["/usr/bin/x"][0]`: plain keys (policy field names) with dots, others quoted, indices in brackets. */
export const jsonPath = (keys: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const k of keys) {
    if (typeof k === "number") out += `[${k}]`
    else if (typeof k === "string" && IDENTIFIER.test(k)) out += out === "" ? k : `.${k}`
    else out += `[${JSON.stringify(String(k))}]`
  }
  return out
}

/** A value in a message, cut short: a policy can hold megabytes in one string. */
const shown = (v: unknown): string => {
  const s = v === undefined ? "undefined" : JSON.stringify(v) ?? String(v)
  return s.length > 100 ? `${s.slice(0, 100)}…` : s
}

const isObject = (u: unknown): u is object => typeof u === "object" && u !== null && !Array.isArray(u)

const decodeStructure = Schema.decodeUnknownEither(RuntimePolicyStructure)

/** The first schema issue as a path and a reason; a missing property is said as Keylime's jsonschema says it. */
export const schemaIssue = (e: ParseResult.ParseError): RuntimePolicyError => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(e)[0]
  if (issue === undefined) return malformatted("", e.message)
  if (issue._tag === "Missing") {
    const key = issue.path[issue.path.length - 1]
    return malformatted(jsonPath(issue.path.slice(0, -1)), `'${String(key)}' is a required property`)
  }
  return malformatted(jsonPath(issue.path), issue.message)
}

/** One digest map → its NameTable; the first bad value fails naming its path. */
const buildTable = (field: string, map: Readonly<Record<string, unknown>>): Either.Either<NameTable, RuntimePolicyError> => {
  const names = Object.keys(map)
  const b = new NameTableBuilder(names.length)
  for (const name of names) {
    const digests: unknown = map[name]
    if (!Array.isArray(digests) || digests.length === 0) {
      const path = `${field}[${JSON.stringify(name)}]`
      return Either.left(malformatted(path, Array.isArray(digests) ? "expected at least one digest" : `expected a list of digests, got ${shown(digests)}`))
    }
    b.addName(name)
    for (let i = 0; i < digests.length; i++) {
      const d: unknown = digests[i]
      if (typeof d !== "string" || !b.addDigestHex(d)) {
        const path = `${field}[${JSON.stringify(name)}][${i}]`
        return Either.left(malformatted(path, typeof d === "string" ? `digest ${shown(d)} ${DIGEST_RULE}` : `expected a digest string, got ${shown(d)}`))
      }
    }
  }
  return Either.right(b.build())
}

/**
 * A parsed runtime policy (v1, Keylime's RUNTIME_POLICY_SCHEMA) → compiled, or the first problem with
 * its path. Used by `loadRuntimePolicy` and by the CLI for converted legacy allowlists. `tables`:
 * digest maps the loader's scan already compiled (their place in `doc` holds an empty object).
 */
export const compileRuntimePolicyDocument = (
  doc: unknown,
  tables: Partial<Record<DigestMapField, NameTable>> = {}
): Either.Either<CompiledRuntimePolicy, RuntimePolicyError> => {
  if (!isObject(doc)) return Either.left(malformatted("", `expected a JSON object, got ${shown(doc)}`))
  for (const key of RUNTIME_POLICY_REQUIRED) {
    if (!Object.hasOwn(doc, key)) return Either.left(malformatted("", `'${key}' is a required property`))
  }
  const decoded = decodeStructure(doc)
  if (Either.isLeft(decoded)) return Either.left(schemaIssue(decoded.left))
  const p = decoded.right
  const ex = compileExcludes(p.excludes)
  if (Either.isLeft(ex)) return Either.left(malformatted(`excludes[${ex.left.index}]`, ex.left.reason))
  const keys = keyringFromJson(p["verification-keys"])
  if (Either.isLeft(keys)) return Either.left(malformatted("verification-keys", keys.left))
  const table = (field: DigestMapField) => {
    const done = tables[field]
    return done === undefined ? buildTable(field, p[field]) : Either.right(done)
  }
  const digests = table("digests")
  if (Either.isLeft(digests)) return Either.left(digests.left)
  const keyrings = table("keyrings")
  if (Either.isLeft(keyrings)) return Either.left(keyrings.left)
  const imaBuf = table("ima-buf")
  if (Either.isLeft(imaBuf)) return Either.left(imaBuf.left)
  const generator = p.meta.generator ?? Generator.Unknown
  return Either.right({
    policy: {
      digests: digests.right,
      keyrings: keyrings.right,
      imaBuf: imaBuf.right,
      exclude: ex.right,
      ignoredKeyrings: new Set(p.ima.ignored_keyrings),
      logHashAlg: p.ima.log_hash_alg,
      verificationKeys: keys.right
    },
    meta: p.meta,
    release: p.release,
    generator,
    hasRuntimePolicy: generator > Generator.EmptyAllowList,
    names: digests.right.size + keyrings.right.size + imaBuf.right.size
  })
}
