/**
 * TO BE REPLACED by `parseTpmPolicy` (src/attestation/evaluate/tpmPolicy.ts, written by the evaluator
 * work) when it lands: until then agent creation checks `tpm_policy` here, so a bad policy is refused
 * with the field named instead of failing every attestation later.
 *
 * A tpm_policy is a JSON object as a string: `mask` (hex PCR selection, "0x400") and PCR numbers
 * ("0".."23") mapping to the allowed hex values (a list, or one string as old tenants wrote).
 */
import { Either, Schema } from "effect"

const decodeJsonObject = Schema.decodeUnknownEither(
  Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
)

const MASK = /^0x[0-9a-fA-F]{1,6}$/
const PCR_KEY = /^(?:[0-9]|1[0-9]|2[0-3])$/
const HEX_VALUE = /^(?:0x)?[0-9a-fA-F]+$/

export interface CheckedTpmPolicy {
  readonly mask: number
  /** PCR → allowed values (lower-case hex, no 0x). */
  readonly pcrs: ReadonlyMap<number, ReadonlyArray<string>>
}

/** The policy, or the reason (completes "tpm_policy <reason>"). */
export const checkTpmPolicy = (text: string): Either.Either<CheckedTpmPolicy, string> => {
  const parsed = decodeJsonObject(text)
  if (Either.isLeft(parsed)) return Either.left("must be a JSON object as a string, such as \"{\\\"mask\\\": \\\"0x400\\\"}\"")
  const obj = parsed.right
  const mask = obj["mask"]
  if (mask === undefined) return Either.left("has no \"mask\" (the hex PCR selection, such as \"0x400\")")
  if (typeof mask !== "string" || !MASK.test(mask)) {
    return Either.left(`"mask" must be a hex string of PCRs 0-23 such as "0x400", got ${JSON.stringify(mask)}`)
  }
  const pcrs = new Map<number, ReadonlyArray<string>>()
  for (const [key, value] of Object.entries(obj)) {
    if (key === "mask") continue
    if (!PCR_KEY.test(key)) return Either.left(`has key ${JSON.stringify(key)}: keys are "mask" and PCR numbers 0-23`)
    const values = typeof value === "string" ? [value] : value
    if (!Array.isArray(values) || !values.every((v): v is string => typeof v === "string" && HEX_VALUE.test(v))) {
      return Either.left(`PCR ${key} must map to a list of hex values`)
    }
    pcrs.set(Number(key), values.map((v) => v.toLowerCase().replace(/^0x/, "")))
  }
  return Either.right({ mask: Number.parseInt(mask.slice(2), 16), pcrs })
}
