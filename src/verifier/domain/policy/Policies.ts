/**
 * Named runtime (IMA) and measured-boot policies with Keylime's semantics (keylime-wire.md §1.4):
 * create (taken name → exists), replace (unknown → not found), read, list in creation order,
 * delete (used by an agent → in use, naming it). Every upload is checked before anything is stored
 * (signatures, format, compile); a refused upload changes nothing.
 */
import { Effect, Either, Option } from "effect"
import { isAscii } from "node:buffer"
import type { MbPolicyNames, MbPolicyResponse, RuntimePolicyNames, RuntimePolicyResponse } from "../../../../schemas/Verifier.js"
import { VerifierConfig } from "../../../config/services.js"
import { isPolicyName, POLICY_NAME_RULE } from "../agentBody.js"
import {
  InvalidMbPolicy,
  InvalidPolicyName,
  InvalidRuntimePolicy,
  MbPolicyExists,
  MbPolicyInUse,
  MbPolicyNotFound,
  RuntimePolicyExists,
  RuntimePolicyInUse,
  RuntimePolicyNotFound
} from "../errors.js"
import { MbPolicyRepo, type RuntimePolicyData, RuntimePolicyRepo } from "../repo/PolicyRepo.js"
import { prepareMbPolicy } from "./mbUpload.js"
import { prepareRuntimePolicy, type RuntimePolicyUpload } from "./runtimeUpload.js"
import { checkTpmPolicy } from "../../../attestation/tpmPolicyCheck.js"

/**
 * Strict base64: the bytes, only when encoding them again gives the same text (the standard
 * alphabet, canonical padding and trailing bits), decided without encoding 15 MB again. Buffer's
 * decoder skips what is outside its alphabets and stops at a `=`, so any such character leaves
 * fewer bytes than the length and padding promise; it also takes `-` and `_` (base64url), which are
 * looked for; and the last group's trailing bits are checked by its own round trip.
 */
export const base64Buffer = (s: string): Buffer | undefined => {
  if ((s.length & 3) !== 0) return undefined
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0
  const b = Buffer.from(s, "base64")
  if (b.length !== (s.length >> 2) * 3 - pad || s.includes("-") || s.includes("_")) return undefined
  const last = s.slice(-4)
  return pad === 0 || Buffer.from(last, "base64").toString("base64") === last ? b : undefined
}
/** base64Buffer as a plain Uint8Array of its own, for keys and signatures: a small Buffer is a view into Buffer's shared pool. */
const base64Bytes = (s: string): Uint8Array | undefined => {
  const b = base64Buffer(s)
  return b === undefined ? undefined : new Uint8Array(b)
}

/**
 * Bytes → text, refusing what is not UTF-8. A policy is nearly always ASCII: a native check and a
 * latin1 copy cost a fraction of the validating decoder's pass (10 MB: ~2 ms against ~12).
 */
const utf8Text = (bytes: Buffer): string | undefined => {
  if (isAscii(bytes)) return bytes.toString("latin1")
  const text = Either.try(() => new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  return Either.isRight(text) ? text.right : undefined
}

const checkName = (kind: "runtime" | "mb", name: string) =>
  isPolicyName(name) ? Effect.void : Effect.fail(new InvalidPolicyName({ kind, name, field: "name", reason: POLICY_NAME_RULE }))

/** A runtime-policy request body → the upload to check, or the field refused. */
export const decodeRuntimePolicyRequest = (
  name: string,
  body: unknown
): Either.Either<RuntimePolicyUpload, InvalidRuntimePolicy> => {
  const refuse = (field: string, reason: string) =>
    Either.left(new InvalidRuntimePolicy({ name, field, problem: "invalid", reason }))
  if (typeof body !== "object" || body === null || Array.isArray(body)) return refuse("body", "must be a JSON object")
  const b = body as Readonly<Record<string, unknown>>
  const raw = b["runtime_policy"]
  if (raw === undefined || raw === null) return refuse("runtime_policy", "is required (base64 of the policy JSON)")
  if (typeof raw !== "string" || raw === "") return refuse("runtime_policy", "must be base64 of the policy JSON")
  const bytes = base64Buffer(raw)
  if (bytes === undefined) return refuse("runtime_policy", "is not valid base64")
  const text = utf8Text(bytes)
  if (text === undefined) return refuse("runtime_policy", "is not UTF-8 text once base64-decoded")
  const optionalBytes = (k: string): Either.Either<Uint8Array | null, InvalidRuntimePolicy> => {
    const v = b[k]
    if (v === undefined || v === null || v === "") return Either.right(null)
    if (typeof v !== "string") return refuse(k, "must be base64 text or null")
    const decoded = base64Bytes(v)
    return decoded === undefined ? refuse(k, "is not valid base64") : Either.right(decoded)
  }
  const key = optionalBytes("runtime_policy_key")
  if (Either.isLeft(key)) return Either.left(key.left)
  const signature = optionalBytes("runtime_policy_sig")
  if (Either.isLeft(signature)) return Either.left(signature.left)
  if (signature.right !== null && key.right === null) return refuse("runtime_policy_sig", "needs runtime_policy_key (they must be given together)")
  const tpm = b["tpm_policy"]
  if (tpm !== undefined && tpm !== null) {
    if (typeof tpm !== "string") return refuse("tpm_policy", "must be a string holding a JSON object, or null")
    if (tpm !== "") {
      const checked = checkTpmPolicy(tpm)
      if (Either.isLeft(checked)) return refuse("tpm_policy", checked.left)
    }
  }
  return Either.right({
    text,
    bytes,
    key: key.right,
    signature: signature.right,
    tpmPolicy: typeof tpm === "string" && tpm !== "" ? tpm : null
  })
}

/** An mb-policy request body → the reference-state text (null: empty), or the field refused. */
export const decodeMbPolicyRequest = (name: string, body: unknown): Either.Either<string | null, InvalidMbPolicy> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return Either.left(new InvalidMbPolicy({ name, field: "body", reason: "must be a JSON object" }))
  }
  const v = (body as Readonly<Record<string, unknown>>)["mb_policy"]
  if (v === undefined || v === null) return Either.right(null)
  return typeof v === "string"
    ? Either.right(v)
    : Either.left(new InvalidMbPolicy({ name, field: "mb_policy", reason: "must be the reference state as a JSON string, or null" }))
}

export class Policies extends Effect.Service<Policies>()("attest/verifier/Policies", {
  dependencies: [RuntimePolicyRepo.Default, MbPolicyRepo.Default],
  effect: Effect.gen(function*() {
    const runtime = yield* RuntimePolicyRepo
    const mb = yield* MbPolicyRepo
    const config = yield* VerifierConfig

    const prepareRuntime = (name: string, body: unknown) =>
      Effect.gen(function*() {
        yield* checkName("runtime", name)
        const upload = yield* decodeRuntimePolicyRequest(name, body)
        return yield* prepareRuntimePolicy(name, upload, { requireSignatures: config.require_allow_list_signatures })
      })

    /** POST /allowlists/:name (201). */
    const addRuntime = Effect.fn("Policies.addRuntime")(function*(name: string, body: unknown) {
      const prepared = yield* prepareRuntime(name, body)
      if (!(yield* runtime.insert(name, prepared.data))) return yield* new RuntimePolicyExists({ name })
      yield* Effect.logInfo(`Runtime policy ${name} stored (${prepared.data.digest_count} paths, checksum ${prepared.data.checksum})`)
      return storedRuntime(name, prepared.data)
    })

    /** PUT /allowlists/:name (201); agents that use it judge their next quote with the new text. */
    const updateRuntime = Effect.fn("Policies.updateRuntime")(function*(name: string, body: unknown) {
      const prepared = yield* prepareRuntime(name, body)
      if (!(yield* runtime.update(name, prepared.data))) return yield* new RuntimePolicyNotFound({ name })
      yield* Effect.logInfo(`Runtime policy ${name} replaced (${prepared.data.digest_count} paths, checksum ${prepared.data.checksum})`)
      return storedRuntime(name, prepared.data)
    })

    /** What was just stored, as GET would answer it, without reading megabytes back. */
    const storedRuntime = (name: string, data: RuntimePolicyData): RuntimePolicyResponse => ({ name, tmp_policy: data.tpm_policy, runtime_policy: data.runtime_policy })

    /** GET /allowlists/:name. */
    const getRuntime = Effect.fn("Policies.getRuntime")(function*(name: string) {
      const row = yield* runtime.find(name)
      if (Option.isNone(row)) return yield* new RuntimePolicyNotFound({ name })
      return storedRuntime(row.value.name, row.value)
    })

    /** GET /allowlists/. */
    const listRuntime = Effect.fn("Policies.listRuntime")(function*() {
      const result: RuntimePolicyNames = { "runtimepolicy names": yield* runtime.names() }
      return result
    })

    /** DELETE /allowlists/:name (204). */
    const deleteRuntime = Effect.fn("Policies.deleteRuntime")(function*(name: string) {
      if (!(yield* runtime.exists(name))) return yield* new RuntimePolicyNotFound({ name })
      const user = yield* runtime.usedBy(name)
      if (Option.isSome(user)) return yield* new RuntimePolicyInUse({ name, agentId: user.value })
      if (!(yield* runtime.remove(name))) return yield* new RuntimePolicyNotFound({ name })
      yield* Effect.logInfo(`Runtime policy ${name} deleted`)
    })

    const prepareMb = (name: string, body: unknown) =>
      Effect.gen(function*() {
        yield* checkName("mb", name)
        const text = yield* decodeMbPolicyRequest(name, body)
        return yield* prepareMbPolicy(name, text)
      })

    /** POST /mbpolicies/:name (201). */
    const addMb = Effect.fn("Policies.addMb")(function*(name: string, body: unknown) {
      const data = yield* prepareMb(name, body)
      if (!(yield* mb.insert(name, data))) return yield* new MbPolicyExists({ name })
      yield* Effect.logInfo(`Measured-boot policy ${name} stored (${data.has_policy ? `${data.key_count} keys` : "empty"})`)
    })

    /** PUT /mbpolicies/:name (201; an unknown name is Keylime's 409, chosen in Http.ts). */
    const updateMb = Effect.fn("Policies.updateMb")(function*(name: string, body: unknown) {
      const data = yield* prepareMb(name, body)
      if (!(yield* mb.update(name, data))) return yield* new MbPolicyNotFound({ name })
      yield* Effect.logInfo(`Measured-boot policy ${name} replaced`)
    })

    const getMb = Effect.fn("Policies.getMb")(function*(name: string) {
      const row = yield* mb.find(name)
      if (Option.isNone(row)) return yield* new MbPolicyNotFound({ name })
      const result: MbPolicyResponse = { name: row.value.name, mb_policy: row.value.mb_policy }
      return result
    })

    const listMb = Effect.fn("Policies.listMb")(function*() {
      const result: MbPolicyNames = { "mbpolicy names": yield* mb.names() }
      return result
    })

    const deleteMb = Effect.fn("Policies.deleteMb")(function*(name: string) {
      if (!(yield* mb.exists(name))) return yield* new MbPolicyNotFound({ name })
      const user = yield* mb.usedBy(name)
      if (Option.isSome(user)) return yield* new MbPolicyInUse({ name, agentId: user.value })
      if (!(yield* mb.remove(name))) return yield* new MbPolicyNotFound({ name })
      yield* Effect.logInfo(`Measured-boot policy ${name} deleted`)
    })

    return {
      addRuntime,
      updateRuntime,
      getRuntime,
      listRuntime,
      deleteRuntime,
      addMb,
      updateMb,
      getMb,
      listMb,
      deleteMb
    } as const
  })
}) {}
