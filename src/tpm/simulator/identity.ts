/**
 * The simulator's endorsement identity: EKs (RSA 2048 and ECC P-256, standard templates) derived
 * from the seed, their Names and qualified names, and their certificates from the simulator
 * manufacturer CA. Derivation is cached per seed for the process, so many simulators with one
 * test seed pay for the RSA key once.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto"
import { Either } from "effect"
import { toHex, Writer } from "../bytes.js"
import { ekQualifiedName, nameOf, type TpmtPublic } from "../public.js"
import { ekPublicFromKey } from "../templates.js"
import type { KeyAlg } from "../Tpm.js"
import { deriveEcKey, deriveRsaKey } from "./derive.js"
import { issueEkCertificate } from "./manufacturer.js"

export interface Ek {
  readonly alg: KeyAlg
  readonly key: KeyObject
  readonly public: TpmtPublic
  /** TPM2B_PUBLIC bytes. */
  readonly tpm2b: Uint8Array
  readonly name: Uint8Array
  readonly qualifiedName: Uint8Array
  readonly certificate: Uint8Array
}

/** Any seed (bytes or text) becomes 32 bytes. */
export const normalizeSeed = (seed: Uint8Array | string): Uint8Array =>
  new Uint8Array(createHash("sha256").update(typeof seed === "string" ? Buffer.from(seed, "utf8") : seed).digest())

export const deriveEkKey = (seed: Uint8Array, alg: KeyAlg): KeyObject =>
  alg === "rsa" ? deriveRsaKey(seed, "endorsement-rsa", 2048) : deriveEcKey(seed, "endorsement-ecc", 256)

/** Builds the EK record for a private key; `certificate` reuses a stored one when given. */
export const ekOf = (alg: KeyAlg, key: KeyObject, certificate?: Uint8Array): Either.Either<Ek, string> =>
  Either.gen(function*() {
    const pub = createPublicKey(key)
    const tpmt = yield* Either.mapLeft(ekPublicFromKey(pub), (e) => `EK template: ${e.message}`)
    const name = nameOf(tpmt)
    const qualifiedName = yield* Either.mapLeft(ekQualifiedName(name), (e) => e.message)
    const cert = certificate ?? (yield* issueEkCertificate(pub))
    return {
      alg,
      key,
      public: tpmt,
      tpm2b: new Writer(tpmt.bytes.length + 2).tpm2b(tpmt.bytes).finish(),
      name,
      qualifiedName,
      certificate: cert
    }
  })

const cache = new Map<string, Ek>()

/** The EK of `alg` for a seed (cached for the process). */
export const ekForSeed = (seed: Uint8Array, alg: KeyAlg): Either.Either<Ek, string> => {
  const k = `${toHex(seed)}:${alg}`
  const hit = cache.get(k)
  if (hit !== undefined) return Either.right(hit)
  const ek = ekOf(alg, deriveEkKey(seed, alg))
  if (Either.isRight(ek)) cache.set(k, ek.right)
  return ek
}

export const ekToStored = (ek: Ek): { readonly privateKey: string; readonly certificate: string } => ({
  privateKey: Buffer.from(ek.key.export({ format: "der", type: "pkcs8" })).toString("base64"),
  certificate: Buffer.from(ek.certificate).toString("base64")
})

export const ekFromStored = (
  alg: KeyAlg,
  stored: { readonly privateKey: string; readonly certificate: string }
): Either.Either<Ek, string> => {
  try {
    const key = createPrivateKey({ key: Buffer.from(stored.privateKey, "base64"), format: "der", type: "pkcs8" })
    return ekOf(alg, key, new Uint8Array(Buffer.from(stored.certificate, "base64")))
  } catch (e) {
    return Either.left(`stored ${alg} EK key: ${e instanceof Error ? e.message : String(e)}`)
  }
}
