/**
 * PCR checks on the verified quote's hash_alg bank: the NK binding of PCR 16 (the agent resets
 * PCR 16 and extends H(NK PEM text) into it, so it must equal H(0…0 ‖ H(PEM))) and the
 * `tpm_policy` allow-lists (Keylime `check_pcrs`, keylime-wire.md §6).
 */
import { cryptoPort } from "../../crypto/active.js"
import { concat, toHex, utf8Bytes } from "../../crypto/encoding.js"
import type { Failure } from "../../../schemas/Evidence.js"
import { digestSize, type HashAlg } from "../../tpm/hashAlg.js"
import { invalidPcr16, missingPcr16, missingPcrs, pcrNotAllowed } from "./failures.js"
import { DATA_PCR, IMA_PCR, type TpmPolicy } from "./tpmPolicy.js"

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i])

/** H(zeros ‖ H(pem)) in `bank`, what PCR 16 holds after the agent's reset and extend. */
export const nkPcrValue = (bank: HashAlg, pem: string): Uint8Array => {
  const inner = cryptoPort().digest(bank, utf8Bytes(pem))
  return cryptoPort().digest(bank, concat(new Uint8Array(digestSize(bank)), inner))
}

// The same NK comes back every round: its PCR 16 value is computed once per (bank, PEM). Keyed by
// the PEM string itself (a string caches its hash), one map per bank.
const nkCache = new Map<HashAlg, Map<string, Uint8Array>>()
const NK_CACHE_MAX = 4096

const expectedNk = (bank: HashAlg, pem: string): Uint8Array => {
  let byPem = nkCache.get(bank)
  if (byPem === undefined) nkCache.set(bank, (byPem = new Map()))
  let v = byPem.get(pem)
  if (v === undefined) {
    v = nkPcrValue(bank, pem)
    if (byPem.size >= NK_CACHE_MAX) byPem.clear()
    byPem.set(pem, v)
  }
  return v
}

/** PCR 16 against the NK; undefined when it matches. */
export const checkNkBinding = (values: ReadonlyMap<number, Uint8Array> | undefined, bank: HashAlg, pem: string): Failure | undefined => {
  const got = values?.get(DATA_PCR)
  if (got === undefined) return missingPcr16()
  const expected = expectedNk(bank, pem)
  return sameBytes(expected, got) ? undefined : invalidPcr16(toHex(got), toHex(expected))
}

/**
 * The quoted PCRs the policy lists must hold one of the listed values, and every listed PCR must be
 * quoted. PCR 10 belongs to IMA and PCR 16 (when the NK binding is checked) to the NK: Keylime
 * counts them as checked, so the policy's lists for them are not consulted.
 */
export const checkTpmPolicy = (
  values: ReadonlyMap<number, Uint8Array> | undefined,
  policy: TpmPolicy,
  nkBound: boolean,
  into: Array<Failure>,
  missingInto: Array<Failure>
): void => {
  if (policy.pcrs.size === 0) return
  let missing: Array<number> | undefined
  for (const [pcr, allowed] of policy.pcrs) {
    if (pcr === IMA_PCR && values?.has(IMA_PCR) === true) continue
    if (pcr === DATA_PCR && nkBound && values?.has(DATA_PCR) === true) continue
    const v = values?.get(pcr)
    if (v === undefined) {
      ;(missing ??= []).push(pcr)
      continue
    }
    const hex = toHex(v)
    if (!allowed.has(hex)) into.push(pcrNotAllowed(pcr, hex, allowed))
  }
  if (missing !== undefined) missingInto.push(missingPcrs(missing.sort((a, b) => a - b)))
}
