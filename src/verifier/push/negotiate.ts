/**
 * Phase 1's choice (push-model.md §1.3): from the agent's capabilities and its policies, the
 * evidence the verifier requests and the parameters of each. Pure; the challenge bytes and the
 * IMA starting offset come from the caller.
 *
 * Required PCRs: those `tpm_policy` lists, the measured-boot PCRs when a reference state is set,
 * PCR 10 when a runtime policy is. The quote is always requested (Keylime requests none when no
 * PCR is required, then fails in the background; attest asks for a quote over the empty set plus
 * PCR 16, which the agent always adds, so the AK still signs the challenge).
 */
import { Either } from "effect"
import type { CertificationKey, EvidenceRequested, EvidenceSupported, LogCapabilities, TpmQuoteCapabilities } from "../../../schemas/Push.js"
import { isAccepted } from "../../attestation/evaluate/algorithms.js"
import { IMA_PCR, MEASURED_BOOT_PCRS } from "../../attestation/evaluate/tpmPolicy.js"
import { InvalidResourceData } from "./errors.js"

export interface NegotiationPolicy {
  /** PCRs `tpm_policy` gives values for. */
  readonly tpmPolicyPcrs: ReadonlyArray<number>
  readonly hasRuntimePolicy: boolean
  readonly hasMbPolicy: boolean
  readonly acceptHash: ReadonlyArray<string>
  readonly acceptSigning: ReadonlyArray<string>
  /** The agent's AK (base64 TPM2B_PUBLIC) to prefer a matching key. */
  readonly akTpm: string
}

export interface NegotiationInput {
  readonly evidenceSupported: ReadonlyArray<EvidenceSupported>
  readonly challenge: string
  /** Where the IMA log continues (0 after a reboot or before the first pass). */
  readonly imaOffset: number
}

const POINTER = "/data/attributes/evidence_supported"

const refuse = (type: string, check: string) =>
  Either.left(
    new InvalidResourceData({
      pointer: POINTER,
      reason: `must have '${type}' with capabilities which are valid and satisfy agent policy (check '${check}')`
    })
  )

export const requiredPcrs = (p: NegotiationPolicy): ReadonlyArray<number> => {
  const set = new Set(p.tpmPolicyPcrs)
  if (p.hasMbPolicy) for (const pcr of MEASURED_BOOT_PCRS) set.add(pcr)
  if (p.hasRuntimePolicy) set.add(IMA_PCR)
  return [...set].sort((a, b) => a - b)
}

const allows = (list: ReadonlyArray<string> | undefined, value: string) => list === undefined || list.length === 0 || list.includes(value)

/** The AK's TPMT_PUBLIC is the TPM2B_PUBLIC without its 2-byte size: a key whose `public` is either matches. */
const isAgentAk = (key: CertificationKey, akTpm: string): boolean => {
  if (key.public === undefined) return false
  if (key.public === akTpm) return true
  const ak = Buffer.from(akTpm, "base64")
  return ak.length > 2 && Buffer.from(key.public, "base64").equals(ak.subarray(2))
}

const chooseQuote = (caps: TpmQuoteCapabilities, p: NegotiationPolicy, required: ReadonlyArray<number>, challenge: string) => {
  if (caps.component_version !== "2.0") return refuse("tpm_quote", "component_version")
  const keys = caps.certification_keys.filter((k) => k.key_class === "asymmetric")
  const key = keys.find((k) => isAgentAk(k, p.akTpm)) ?? keys.find((k) => k.server_identifier === "ak") ?? keys[0]
  if (key === undefined) return refuse("tpm_quote", "certification_keys")
  const banks = Object.keys(caps.available_subjects)
  const usable = (bank: string) =>
    isAccepted(bank, p.acceptHash) && required.every((pcr) => caps.available_subjects[bank]!.includes(pcr))
  const hash = p.acceptHash.find((h) => caps.hash_algorithms.includes(h) && allows(key.allowable_hash_algorithms, h) && banks.includes(h) && usable(h))
  if (hash === undefined) return refuse("tpm_quote", "hash_algorithms")
  const scheme = p.acceptSigning.find((s) => caps.signature_schemes.includes(s) && allows(key.allowable_signature_schemes, s))
  if (scheme === undefined) return refuse("tpm_quote", "signature_schemes")
  // every bank: the agent's preference first, then the others; usable banks get the PCR list
  const ordered = [...p.acceptHash.filter((h) => banks.includes(h)), ...banks.filter((b) => !p.acceptHash.includes(b))]
  const selected: Record<string, ReadonlyArray<number> | null> = {}
  for (const bank of ordered) selected[bank] = usable(bank) ? [...required] : null
  return Either.right<EvidenceRequested>({
    evidence_class: "certification",
    evidence_type: "tpm_quote",
    chosen_parameters: { signature_scheme: scheme, challenge, hash_algorithm: hash, selected_subjects: selected, certification_key: key }
  })
}

const logItem = (items: ReadonlyArray<EvidenceSupported>, type: "uefi_log" | "ima_log") =>
  items.find((i): i is Extract<EvidenceSupported, { evidence_class: "log" }> => i.evidence_type === type)

/** The evidence requested, in Keylime's order: tpm_quote, uefi_log, ima_log. */
export const negotiate = (input: NegotiationInput, policy: NegotiationPolicy): Either.Either<ReadonlyArray<EvidenceRequested>, InvalidResourceData> => {
  const required = requiredPcrs(policy)
  const quoteItem = input.evidenceSupported.find((i) => i.evidence_type === "tpm_quote")
  if (quoteItem === undefined || quoteItem.evidence_class !== "certification") return refuse("tpm_quote", "evidence_type")
  const quote = chooseQuote(quoteItem.capabilities, policy, required, input.challenge)
  if (Either.isLeft(quote)) return Either.left(quote.left)
  const out: Array<EvidenceRequested> = [quote.right]
  if (policy.hasMbPolicy) {
    const uefi = logItem(input.evidenceSupported, "uefi_log")
    if (uefi === undefined || !uefi.capabilities.formats.includes("application/octet-stream")) return refuse("uefi_log", "formats")
    out.push({ evidence_class: "log", evidence_type: "uefi_log", chosen_parameters: { format: "application/octet-stream" } })
  }
  if (policy.hasRuntimePolicy) {
    const ima = logItem(input.evidenceSupported, "ima_log")
    if (ima === undefined) return refuse("ima_log", "evidence_type")
    const caps: LogCapabilities = ima.capabilities
    if (!caps.formats.includes("text/plain")) return refuse("ima_log", "formats")
    if (!caps.supports_partial_access) return refuse("ima_log", "supports_partial_access")
    // a shorter log than where we were: the machine rebooted, start over
    const offset = caps.entry_count !== undefined && input.imaOffset > caps.entry_count ? 0 : input.imaOffset
    out.push({ evidence_class: "log", evidence_type: "ima_log", chosen_parameters: { starting_offset: offset, format: "text/plain" } })
  }
  return Either.right(out)
}
