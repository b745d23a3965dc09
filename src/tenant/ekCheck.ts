/**
 * The EK certificate check of `add` (Keylime's tenant `check_ek`): the registrar's `ekcert` must
 * chain to a certificate of the manufacturer trust store (`[tenant] ek_ca_dir`, Keylime's
 * `tpm_cert_store`) and certify the registered `ek_tpm`. Without a certificate the agent is refused
 * while `require_ek_cert` is on.
 */
import { Effect, Either } from "effect"
import { loadTrustStorePath, type TrustStore, validateChain } from "../pki/chain.js"
import { ekCertificateMatchesPublic } from "../tpm/ekCertificate.js"
import { TenantError } from "./errors.js"

export const loadEkTrustStore = (dir: string) =>
  loadTrustStorePath(dir).pipe(Effect.mapError((e) => new TenantError({ message: `EK trust store (ek_ca_dir ${dir}): ${e.message}` })))

/** The issuer's subject when the certificate is trusted; Right(undefined) when none and none is required. */
export const checkEkCertificate = (agentId: string, record: { readonly ekcert: string | null; readonly ek_tpm: string }, store: TrustStore, required: boolean) =>
  Effect.gen(function*() {
    if (record.ekcert === null) {
      if (!required) return undefined
      return yield* new TenantError({
        message: `agent ${agentId} registered without an EK certificate; set [tenant] require_ek_cert = false to enrol it on its EK alone`
      })
    }
    const der = new Uint8Array(Buffer.from(record.ekcert, "base64"))
    const matches = ekCertificateMatchesPublic(der, new Uint8Array(Buffer.from(record.ek_tpm, "base64")))
    if (Either.isLeft(matches)) return yield* new TenantError({ message: `agent ${agentId}: EK certificate refused: ${matches.left.message}` })
    const chain = yield* validateChain(der, store).pipe(
      Effect.mapError((e) => new TenantError({ message: `agent ${agentId}: EK certificate refused: ${e.message}` }))
    )
    return chain.path[chain.path.length - 1]!.subject.replace(/\n/g, ", ")
  })
