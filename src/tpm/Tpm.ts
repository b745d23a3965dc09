/**
 * The `Tpm` port: what attest asks of a TPM 2.0. Two layers implement it, the in-memory
 * `TpmSimulator` (src/tpm/simulator/) and `Tpm2Tools` (src/tpm/tpm2tools/Tpm2Tools.ts, a real TPM or swtpm
 * through tpm2-tools). Everything crosses as TPM wire bytes, so verification code never knows
 * which one produced a quote.
 */
import { Context, Data, type Effect, type Option } from "effect"

export type HashAlg = "sha1" | "sha256" | "sha384" | "sha512"
export type KeyAlg = "rsa" | "ecc"
export type SignScheme = "rsassa" | "rsapss" | "ecdsa"

/** PCRs of one bank, ascending. */
export interface PcrBankSelection {
  readonly hash: HashAlg
  readonly pcrs: ReadonlyArray<number>
}
export type PcrSelection = ReadonlyArray<PcrBankSelection>

/** PCR values in selection order: bank order, then ascending PCR (as TPM2_Quote digests them). */
export interface PcrBankValues {
  readonly hash: HashAlg
  readonly values: ReadonlyMap<number, Uint8Array>
}
export type PcrValues = ReadonlyArray<PcrBankValues>

export interface AkOptions {
  readonly alg: KeyAlg
  /** RSA key size (2048 or 3072) or ECC curve size (256 or 384). Defaults: 2048 / 256. */
  readonly bits?: number
  readonly hash: HashAlg
  readonly scheme: SignScheme
}

/** A loaded attestation key. `saved` is what a caller persists to load the same AK later. */
export interface Ak {
  /** TPM2B_PUBLIC bytes (with the u16 size prefix), as Keylime's `aik_tpm`. */
  readonly public: Uint8Array
  /** u16 nameAlg ‖ H(TPMT_PUBLIC) */
  readonly name: Uint8Array
  readonly options: AkOptions
  readonly saved: SavedAk
}

/** Persistable form of an AK: its public area and the layer's opaque private blob. */
export interface SavedAk {
  readonly ekAlg: KeyAlg
  readonly options: AkOptions
  readonly public: Uint8Array
  readonly private: Uint8Array
}

/** The two halves of a MakeCredential result, each without its TPM2B size prefix. */
export interface CredentialBlob {
  /** TPM2B_ID_OBJECT contents: u16 0x20 ‖ integrityHMAC ‖ encIdentity */
  readonly credential: Uint8Array
  /** TPM2B_ENCRYPTED_SECRET contents: OAEP ciphertext (RSA EK) or TPMS_ECC_POINT (ECC EK) */
  readonly secret: Uint8Array
}

export interface QuoteRequest {
  readonly nonce: Uint8Array
  readonly selection: PcrSelection
}

/** TPMS_ATTEST bytes exactly as signed (no TPM2B prefix), the TPMT_SIGNATURE, and the PCRs read with it. */
export interface QuoteResult {
  readonly attest: Uint8Array
  readonly signature: Uint8Array
  readonly pcrs: PcrValues
}

export interface CertifyResult {
  readonly attest: Uint8Array
  readonly signature: Uint8Array
}

export class TpmError extends Data.TaggedError("TpmError")<{
  /** The Tpm operation, e.g. "quote". */
  readonly operation: string
  readonly message: string
  /** The tool's stderr or the underlying cause, when there is one. */
  readonly detail?: string
}> {}

export interface TpmShape {
  /** Which TPM this is, for logs: "simulator" or "tpm2-tools:<tcti>". */
  readonly description: string
  /** EK public area (TPM2B_PUBLIC bytes) for the RSA 2048 or ECC P-256 EK template. */
  readonly ekPublic: (alg: KeyAlg) => Effect.Effect<Uint8Array, TpmError>
  /** EK certificate (DER) from NV, when provisioned. */
  readonly ekCertificate: (alg: KeyAlg) => Effect.Effect<Option.Option<Uint8Array>, TpmError>
  /** Creates a restricted signing key under the EK of `ekAlg`. */
  readonly createAk: (ekAlg: KeyAlg, options: AkOptions) => Effect.Effect<Ak, TpmError>
  readonly loadAk: (saved: SavedAk) => Effect.Effect<Ak, TpmError>
  /** TPM2_ActivateCredential with the AK and the EK it was created under; returns the secret. */
  readonly activateCredential: (ak: Ak, blob: CredentialBlob) => Effect.Effect<Uint8Array, TpmError>
  readonly quote: (ak: Ak, request: QuoteRequest) => Effect.Effect<QuoteResult, TpmError>
  /** TPM2_Certify of the AK by itself with qualifyingData = nonce (push-model proof of possession). */
  readonly certify: (ak: Ak, nonce: Uint8Array) => Effect.Effect<CertifyResult, TpmError>
  readonly pcrRead: (selection: PcrSelection) => Effect.Effect<PcrValues, TpmError>
  /** Extends one PCR in each bank given; a bank left out is not extended. */
  readonly pcrExtend: (
    pcr: number,
    digests: ReadonlyArray<{ readonly hash: HashAlg; readonly digest: Uint8Array }>
  ) => Effect.Effect<void, TpmError>
  /**
   * TPM2_PCR_Reset: sets the PCR to zeros in every bank. A TPM allows this only for the PCRs its
   * platform profile makes resettable from the caller's locality; at locality 0 (what attest uses)
   * the PC Client profile allows PCR 16 (debug) and 23 (application). Any other PCR fails with a
   * TpmError naming it as not resettable (the TPM answers TPM_RC_LOCALITY).
   */
  readonly pcrReset: (pcr: number) => Effect.Effect<void, TpmError>
  readonly getRandom: (bytes: number) => Effect.Effect<Uint8Array, TpmError>
}

export class Tpm extends Context.Tag("attest/Tpm")<Tpm, TpmShape>() {}
