/**
 * What a push agent sends (push-model.md §1.3-1.6), from its TPM and measurements: the PoP proof
 * (TPM2_Certify of the AK by itself over the session challenge), the phase-1 capabilities, and the
 * phase-2 evidence for what the verifier requested (a quote over the challenge and the selected
 * PCRs plus PCR 16, the IMA entries from the requested offset, the UEFI log when requested).
 * Shared by `attest push-agent`, the tests and the fleet benchmark.
 */
import { Effect, Option } from "effect"
import type { EvidenceCollected, EvidenceRequested, EvidenceSupported } from "../../schemas/Push.js"
import type { MeasurementSourceShape } from "../agent/measurements/MeasurementSource.js"
import { marshalPcrBlob, pcrBlobOf } from "../tpm/pcrBlob.js"
import type { Ak, HashAlg, TpmShape } from "../tpm/Tpm.js"

const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64")

export const DATA_PCR = 16
const ALL_PCRS = Array.from({ length: 24 }, (_, i) => i)

export interface PushIdentity {
  readonly ak: Ak
  /** PCR banks the TPM has (offered as `available_subjects`). */
  readonly banks: ReadonlyArray<HashAlg>
}

/** TPM_RC_RETRY (0x922) and TPM_RC_YIELDED/TESTING warnings: the TPM asks to send the command again. */
const tpmAsksRetry = (e: { readonly message: string }) => /0x9(22|08|0a)\b/i.test(e.message)
const retryTpm = <A, E extends { readonly message: string }, R>(call: Effect.Effect<A, E, R>) =>
  Effect.retry(call, { times: 5, while: tpmAsksRetry })

/** The AK's proof of possession over a session challenge (base64, as the verifier sends it). */
export const popProof = (tpm: TpmShape, id: PushIdentity, challenge: string) =>
  Effect.map(retryTpm(tpm.certify(id.ak, new Uint8Array(Buffer.from(challenge, "base64")))), (c) => ({ message: b64(c.attest), signature: b64(c.signature) }))

/** Phase 1: what this agent can provide. */
export const capabilitiesOf = (id: PushIdentity, source: MeasurementSourceShape) =>
  Effect.gen(function*() {
    const ak = id.ak.options
    const subjects: Record<string, ReadonlyArray<number>> = {}
    for (const bank of id.banks) subjects[bank] = ALL_PCRS
    const items: Array<EvidenceSupported> = [{
      evidence_class: "certification",
      evidence_type: "tpm_quote",
      capabilities: {
        component_version: "2.0",
        hash_algorithms: [...id.banks],
        signature_schemes: [ak.scheme],
        available_subjects: subjects,
        certification_keys: [{
          key_class: "asymmetric",
          key_algorithm: ak.alg,
          key_size: ak.bits ?? (ak.alg === "rsa" ? 2048 : 256),
          server_identifier: "ak",
          local_identifier: Buffer.from(id.ak.name).toString("hex"),
          // TPMT_PUBLIC, as the Rust agent sends it (the registrar holds the TPM2B_PUBLIC)
          public: b64(id.ak.public.subarray(2)),
          allowable_hash_algorithms: [ak.hash],
          allowable_signature_schemes: [ak.scheme]
        }]
      }
    }]
    const log = yield* Effect.orElseSucceed(source.bootLog, () => Option.none<Uint8Array>())
    if (Option.isSome(log)) {
      items.push({ evidence_class: "log", evidence_type: "uefi_log", capabilities: { evidence_version: "2.1", entry_count: 0, supports_partial_access: false, appendable: false, formats: ["application/octet-stream"] } })
    }
    const ima = yield* Effect.orElseSucceed(source.imaList(0), () => Option.none())
    if (Option.isSome(ima)) {
      const count = ima.value.list.split("\n").filter((l) => l !== "").length
      items.push({ evidence_class: "log", evidence_type: "ima_log", capabilities: { entry_count: count, supports_partial_access: true, appendable: true, formats: ["text/plain"] } })
    }
    const bootTime = new Date((yield* source.bootTime) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z")
    return { evidenceSupported: items, bootTime }
  })

/** Phase 2: the evidence for each requested item, in the order requested. */
export const collectEvidence = (tpm: TpmShape, id: PushIdentity, source: MeasurementSourceShape, requested: ReadonlyArray<EvidenceRequested>) =>
  Effect.forEach(requested, (item): Effect.Effect<EvidenceCollected, unknown> => {
    switch (item.evidence_type) {
      case "tpm_quote": {
        const p = item.chosen_parameters
        const hash = p.hash_algorithm as HashAlg
        const pcrs = [...new Set([...(p.selected_subjects[hash] ?? []), DATA_PCR])].sort((a, b) => a - b)
        const selection = [{ hash, pcrs }]
        return Effect.map(retryTpm(tpm.quote(id.ak, { nonce: new Uint8Array(Buffer.from(p.challenge, "base64")), selection })), (q) => ({
          evidence_class: "certification" as const,
          evidence_type: "tpm_quote" as const,
          data: { subject_data: b64(marshalPcrBlob(pcrBlobOf(selection, q.pcrs))), message: b64(q.attest), signature: b64(q.signature) }
        }))
      }
      case "ima_log":
        // only what the verifier has not seen: from its starting offset
        return Effect.map(source.imaList(item.chosen_parameters.starting_offset), (slice) => {
          const entries = Option.match(slice, { onNone: () => "", onSome: (s) => s.list })
          return { evidence_class: "log" as const, evidence_type: "ima_log" as const, data: { entry_count: entries.split("\n").filter((l) => l !== "").length, entries } }
        })
      case "uefi_log":
        return Effect.map(source.bootLog, (log) => ({
          evidence_class: "log" as const,
          evidence_type: "uefi_log" as const,
          data: { entries: Option.match(log, { onNone: () => "", onSome: b64 }) }
        }))
    }
  })
