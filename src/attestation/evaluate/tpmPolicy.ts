/**
 * `tpm_policy`: the JSON string an agent is added with, `{"mask": "0x408400", "15": ["<hex>", …]}`
 * (keylime-wire.md §6). `mask` is only the PCR selection forwarded to the agent; every other key is
 * a PCR index (decimal) with the values it may hold (a list, or one string). Parsed once when the
 * agent or policy is stored, never per attestation.
 */
import { Data, Either, Schema } from "effect"

export interface TpmPolicy {
  /** The `mask` as given (PCR bitmap), when present. */
  readonly mask: number | undefined
  /** PCR → allowed values, lower-case hex without "0x". */
  readonly pcrs: ReadonlyMap<number, ReadonlySet<string>>
}

/** A `tpm_policy` that cannot be used: the field (`mask`, a PCR key, `"15"[2]`) and why. */
export class TpmPolicyError extends Data.TaggedError("TpmPolicyError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `tpm_policy ${this.field}: ${this.reason}`
  }
}

export const emptyTpmPolicy: TpmPolicy = { mask: undefined, pcrs: new Map() }

const PCR_KEY = /^\d{1,2}$/
const HEX_DIGEST = /^(?:0x)?((?:[0-9a-fA-F]{2}){1,64})$/
const MASK = /^0x[0-9a-fA-F]{1,8}$/
/** PCRs a TPM has (0–23): a mask or key beyond them names nothing that can be quoted. */
const MAX_PCR = 23

const fail = (field: string, reason: string) => Either.left(new TpmPolicyError({ field, reason }))

/**
 * Parses the policy text. Beyond Keylime (which raises deep in the quote check on such input), a
 * non-object, a non-numeric key, a PCR above 23, a bad mask or a value that is not a hex digest is
 * refused here, naming the field. Values are compared in lower case, as Keylime's tenant stores them.
 */
export const parseTpmPolicy = (text: string): Either.Either<TpmPolicy, TpmPolicyError> => {
  const doc = decodeJson(text)
  if (Either.isLeft(doc)) return fail("(document)", `is not JSON: ${doc.left.message}`)
  return tpmPolicyFromJson(doc.right)
}

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/** The same from an already parsed JSON value. */
export const tpmPolicyFromJson = (doc: unknown): Either.Either<TpmPolicy, TpmPolicyError> => {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return fail("(document)", "must be a JSON object")
  let mask: number | undefined
  const pcrs = new Map<number, ReadonlySet<string>>()
  for (const [key, value] of Object.entries(doc)) {
    if (key === "mask") {
      if (typeof value !== "string" || !MASK.test(value)) return fail("mask", `must be a hex string such as "0x400", got ${JSON.stringify(value)}`)
      mask = parseInt(value.slice(2), 16)
      if (mask >= 1 << (MAX_PCR + 1)) return fail("mask", `selects PCRs above ${MAX_PCR}: ${value}`)
      continue
    }
    if (!PCR_KEY.test(key)) return fail(JSON.stringify(key), "is neither 'mask' nor a PCR index")
    const pcr = Number(key)
    if (pcr > MAX_PCR) return fail(JSON.stringify(key), `PCR ${pcr} does not exist (0–${MAX_PCR})`)
    const list = typeof value === "string" ? [value] : value
    if (!Array.isArray(list)) return fail(JSON.stringify(key), `must be a hex digest or a list of them, got ${JSON.stringify(value)}`)
    const allowed = new Set<string>()
    for (const [i, v] of list.entries()) {
      const m = typeof v === "string" ? HEX_DIGEST.exec(v) : null
      if (m === null) return fail(`${JSON.stringify(key)}[${i}]`, `is not a hex digest: ${JSON.stringify(v)}`)
      allowed.add(m[1]!.toLowerCase())
    }
    pcrs.set(pcr, allowed)
  }
  return Either.right({ mask, pcrs })
}

export const IMA_PCR = 10
export const DATA_PCR = 16
/** Keylime's config.MEASUREDBOOT_PCRS: the PCRs the boot log speaks for. */
export const MEASURED_BOOT_PCRS: ReadonlyArray<number> = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15]

const bitsOf = (pcrs: Iterable<number>): number => {
  let m = 0
  for (const p of pcrs) m |= 1 << p
  return m >>> 0
}

const MEASURED_BOOT_MASK = bitsOf(MEASURED_BOOT_PCRS)

/**
 * The PCR mask the verifier asks the agent to quote: the policy's `mask`, the PCRs it lists (a
 * listed PCR the quote lacks could only fail as missing), bit 10 when a runtime policy is in use and
 * the measured-boot PCRs when a measured-boot reference state is, as Keylime's tenant builds it.
 * The agent adds PCR 16 itself.
 */
export const quoteMask = (policy: TpmPolicy, uses: { readonly runtimePolicy: boolean; readonly measuredBoot: boolean }): number => {
  let m = (policy.mask ?? 0) | bitsOf(policy.pcrs.keys())
  if (uses.runtimePolicy) m |= 1 << IMA_PCR
  if (uses.measuredBoot) m |= MEASURED_BOOT_MASK
  return m >>> 0
}

/** As Python's hex(): "0x" and lower-case digits, the form the agent's `mask` query takes. */
export const formatMask = (mask: number): string => `0x${(mask >>> 0).toString(16)}`
