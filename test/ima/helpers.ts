/** Shared test material for the IMA engine: vector lists, policies and a line builder. */
import * as crypto from "node:crypto"
import { Either } from "effect"
import { decodeRuntimePolicy, makeRuntimePolicy, type PolicyParts, type RuntimePolicyEncoded } from "../../schemas/RuntimePolicy.js"
import { parseEntry } from "../../src/ima/entry.js"
import { type CompiledPolicy, compilePolicy } from "../../src/ima/policy.js"
import { readVectorText } from "../support/vectors.js"

export const tpmList = () => readVectorText("tpm", "ima", "ascii_runtime_measurements")
export const tpmList7 = () => readVectorText("tpm", "ima", "ascii_runtime_measurements.first7")
export const tpmList256 = () => readVectorText("tpm", "ima", "ascii_runtime_measurements_sha256")

export const FINAL = {
  sha1: "806337040afd6daa507edff837fcfacddb3a1400",
  sha256: "3e3a5b719943a50ff11799ba76be2c80218f2c4dd13474f11b5f66ea85a6f212"
}
export const AFTER7 = {
  sha1: "2afd0c79e9f087d870f60984b458ac941c213c56",
  sha256: "12c6f09f577bfc6683f681629e66ef2c993c81eb2f4018e00bc590dd21ecab09"
}

export const hex = (s: string) => new Uint8Array(Buffer.from(s, "hex"))

export const compile = (p: RuntimePolicyEncoded | unknown): CompiledPolicy =>
  Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(p))))

/** A policy that allows every ima/ima-ng/ima-sig entry of `list` by digest. */
export const policyAllowing = (list: string, extra: Partial<PolicyParts> = {}): RuntimePolicyEncoded => {
  const digests: Record<string, Array<string>> = {}
  for (const line of list.split("\n")) {
    if (line === "") continue
    const e = Either.getOrThrow(parseEntry(line))
    if (e.template === "ima-buf") continue
    ;(digests[e.name] ??= []).push(Buffer.from(e.digest).toString("hex"))
  }
  return makeRuntimePolicy({ ...extra, digests: { ...digests, ...(extra.digests ?? {}) } })
}

/** Builds a kernel-correct line: template hash (sha1 column) computed from the template data. */
export const makeLine = (template: string, digest: string, name: string, extraHex?: string, pcr = "10"): string => {
  const rest = extraHex === undefined ? "" : ` ${extraHex}`
  const probe = `${pcr} ${"00".repeat(20)} ${template} ${digest} ${name}${rest}`
  const e = Either.getOrThrow(parseEntry(probe))
  const th = crypto.createHash("sha1").update(e.templateData).digest("hex")
  return `${pcr} ${th} ${template} ${digest} ${name}${rest}`
}

export const types = (r: { readonly failures: ReadonlyArray<{ readonly type: string }> }) => r.failures.map((f) => f.type)
