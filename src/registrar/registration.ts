/**
 * Registration checks, pure: the body's fields become a validated TPM identity or a typed error
 * naming the field. The EK certificate chain check needs the clock and lives in Registrar.ts; this
 * file gets the already-parsed certificate key.
 */
import * as crypto from "node:crypto"
import { Data, Either } from "effect"
import { parseCertificate } from "../pki/parse.js"
import { makeCredential, encodeCredentialFile, type Rng } from "../tpm/credential.js"
import { keyObjectOf } from "../tpm/nodeKeys.js"
import {
  describePublic,
  isRestrictedSigningKey,
  nameOf,
  parseTpm2bPublic,
  publicKeyOf,
  type TpmtPublic
} from "../tpm/public.js"
import { ekPublicFromKey } from "../tpm/templates.js"
import { TPMA_OBJECT } from "../tpm/constants.js"
import type { RegisterRequest } from "../../schemas/Registrar.js"

/** A registration field that cannot be accepted; `message` names the field and the problem. */
export class InvalidRegistration extends Data.TaggedError("InvalidRegistration")<{
  readonly field: string
  readonly problem: string
}> {
  override get message(): string {
    return `${this.field} ${this.problem}`
  }
}

const invalid = (field: string, problem: string) => Either.left(new InvalidRegistration({ field, problem }))

/** `default`: an EK certificate is checked when sent, ek_tpm alone is accepted (Keylime's default). */
export type TpmIdentityPolicy = "default" | "ek_cert"

export interface ParsedRegistration {
  readonly ekPublic: TpmtPublic
  /** TPM2B_PUBLIC of the EK as stored and shown (the agent's own, or built from the certificate). */
  readonly ekTpm: Uint8Array
  readonly ekCert: Uint8Array | null
  readonly ekCertificate: crypto.X509Certificate | null
  readonly akPublic: TpmtPublic
  readonly akTpm: Uint8Array
  readonly mtlsCert: string | null
}

const b64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"))

const tpm2b = (pub: TpmtPublic): Uint8Array => {
  const out = new Uint8Array(pub.bytes.length + 2)
  out[0] = (pub.bytes.length >>> 8) & 0xff
  out[1] = pub.bytes.length & 0xff
  out.set(pub.bytes, 2)
  return out
}

const spki = (key: crypto.KeyObject): Buffer => key.export({ type: "spki", format: "der" })

const isStorageParent = (pub: TpmtPublic): boolean =>
  (pub.attributes & TPMA_OBJECT.restricted) !== 0 && (pub.attributes & TPMA_OBJECT.decrypt) !== 0 &&
  (pub.type === "rsa" || pub.type === "ecc")

/**
 * The AK must be a restricted signing key, the EK a restricted decryption key (MakeCredential's
 * target); with an EK certificate, `ek_tpm` must hold the certificate's key (or is built from it).
 */
export const parseRegistration = (
  body: RegisterRequest,
  policy: TpmIdentityPolicy
): Either.Either<ParsedRegistration, InvalidRegistration> => {
  const akTpm = b64(body.aik_tpm)
  const ak = parseTpm2bPublic(akTpm)
  if (Either.isLeft(ak)) return invalid("aik_tpm", `is not a TPM2B_PUBLIC: ${ak.left.message} at byte ${ak.left.offset}`)
  if (!isRestrictedSigningKey(ak.right)) {
    const d = describePublic(ak.right)
    return invalid("aik_tpm", `is not a restricted signing key (${JSON.stringify(d)})`)
  }
  if (Either.isLeft(publicKeyOf(ak.right))) return invalid("aik_tpm", "holds a public key that cannot be used")

  const mtlsCert = body.mtls_cert ?? null
  if (mtlsCert !== null && mtlsCert !== "disabled") {
    const ok = Either.try(() => new crypto.X509Certificate(mtlsCert))
    if (Either.isLeft(ok)) return invalid("mtls_cert", "is not a PEM X.509 certificate")
  }

  let ekCertificate: crypto.X509Certificate | null = null
  let ekCert: Uint8Array | null = null
  if (body.ekcert !== undefined && body.ekcert !== null) {
    ekCert = b64(body.ekcert)
    const parsed = parseCertificate(ekCert)
    if (Either.isLeft(parsed)) return invalid("ekcert", `is not a DER X.509 certificate: ${parsed.left.reason}`)
    ekCertificate = parsed.right
  } else if (policy === "ek_cert") {
    return invalid("ekcert", "is required (registrar tpm_identity = ek_cert)")
  }

  let ekPublic: TpmtPublic
  if (body.ek_tpm !== undefined && body.ek_tpm !== null) {
    const ek = parseTpm2bPublic(b64(body.ek_tpm))
    if (Either.isLeft(ek)) return invalid("ek_tpm", `is not a TPM2B_PUBLIC: ${ek.left.message} at byte ${ek.left.offset}`)
    ekPublic = ek.right
    if (ekCertificate !== null) {
      const key = keyObjectOf(ekPublic)
      if (Either.isLeft(key) || !spki(key.right).equals(spki(ekCertificate.publicKey))) {
        return invalid("ek_tpm", "does not hold the public key of ekcert")
      }
    }
  } else if (ekCertificate !== null) {
    const fromCert = ekPublicFromKey(ekCertificate.publicKey)
    if (Either.isLeft(fromCert)) return invalid("ekcert", `holds a key that is not a TPM EK: ${fromCert.left.message}`)
    ekPublic = fromCert.right
  } else {
    return invalid("ek_tpm", "is required when no ekcert is given")
  }
  return Either.right({
    ekPublic,
    ekTpm: tpm2b(ekPublic),
    ekCert,
    ekCertificate,
    akPublic: ak.right,
    akTpm,
    mtlsCert
  })
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** Keylime's challenge: 32 characters of [A-Za-z0-9] (rejection sampling keeps it uniform). */
export const randomChallenge = (rng: Rng = (n) => new Uint8Array(crypto.randomBytes(n))): Uint8Array => {
  const out = new Uint8Array(32)
  let i = 0
  while (i < 32) {
    for (const b of rng(48)) {
      if (b < 248 && i < 32) out[i++] = ALNUM.charCodeAt(b % 62)
    }
  }
  return out
}

export interface Challenge {
  /** The wire credential file; base64 of it is the `blob` answer. */
  readonly blob: Uint8Array
  /** base64 of the secret: Keylime's `key`, the HMAC key of the activation check. */
  readonly key: string
}

/** MakeCredential of a fresh challenge to the EK, bound to the AK's name. */
export const makeChallenge = (
  reg: Pick<ParsedRegistration, "ekPublic" | "akPublic">,
  secret: Uint8Array = randomChallenge()
): Either.Either<Challenge, InvalidRegistration> =>
  !isStorageParent(reg.ekPublic) ? invalid("ek_tpm", "is not a restricted decryption key (an EK)") : Either.match(makeCredential(reg.ekPublic, nameOf(reg.akPublic), secret), {
    onLeft: (e) => invalid("ek_tpm", `cannot be used for MakeCredential: ${e.message}`),
    onRight: (blob) =>
      Either.right({
        blob: encodeCredentialFile(blob),
        key: Buffer.from(secret).toString("base64")
      })
  })

/** Activation check (keylime-wire.md §5): HMAC-SHA384, key = the base64 text of the secret, over the id. */
export const expectedAuthTag = (key: string, agentId: string): string =>
  crypto.createHmac("sha384", Buffer.from(key, "utf8")).update(agentId, "utf8").digest("hex")

export const authTagMatches = (given: string, key: string, agentId: string): boolean => {
  const expected = Buffer.from(expectedAuthTag(key, agentId), "utf8")
  const actual = Buffer.from(given, "utf8")
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected)
}
