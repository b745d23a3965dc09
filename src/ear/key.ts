/**
 * The verifier's EAR signing key: ECDSA P-256 (ES256), from `ear_signing_key` in [verifier]
 * (`default`: ear-signing-key.pem in the TLS directory, generated there, 0600, when missing; or a
 * path, which must exist), and its public half as a JWKS document for relying parties:
 *
 *   const key = yield* earKeyFromSection(section)
 *   // GET /.well-known/jwks.json (the verifier, after the merge):
 *   HttpServerResponse.unsafeJson(jwksDocument([key]), { contentType: JWKS_CONTENT_TYPE })   // = jwksResponse([key])
 *
 * The key id (`kid`) is the RFC 7638 thumbprint of the public key, so it is the same wherever the
 * key is loaded. Node-only (key files, node:crypto); what a relying party needs is jwks.ts (portable).
 */
import { HttpServerResponse } from "@effect/platform"
import { Data, Effect, Either } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { type EarVerificationKey, type EcPublicJwk, JWKS_CONTENT_TYPE, thumbprint } from "./jwks.js"

export { type EarVerificationKey, type EcPublicJwk, JWKS_CONTENT_TYPE, keysFromJwks, thumbprint } from "./jwks.js"

export class EarKeyError extends Data.TaggedError("EarKeyError")<{
  readonly file: string
  readonly reason: string
}> {
  override get message(): string {
    return `EAR signing key ${this.file}: ${this.reason}`
  }
}

export interface EarSigningKey {
  readonly privateKey: crypto.KeyObject
  readonly publicKey: crypto.KeyObject
  /** RFC 7638 thumbprint (base64url SHA-256 of the canonical JWK). */
  readonly kid: string
  readonly jwk: EcPublicJwk & { readonly kid: string; readonly alg: "ES256"; readonly use: "sig" }
}

export const EAR_KEY_FILE = "ear-signing-key.pem"

/** The P-256 public JWK of a key, or a reason it is not one. */
export const publicJwkOf = (key: crypto.KeyObject): Either.Either<EcPublicJwk, string> => {
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    return Either.left(`must be an ECDSA P-256 key (ES256), got ${key.asymmetricKeyType ?? "?"} ${key.asymmetricKeyDetails?.namedCurve ?? ""}`.trim())
  }
  const jwk = (key.type === "private" ? crypto.createPublicKey(key) : key).export({ format: "jwk" })
  if (typeof jwk.x !== "string" || typeof jwk.y !== "string") return Either.left("has no x/y coordinates")
  return Either.right({ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y })
}

export const signingKeyOf = (privateKey: crypto.KeyObject): Either.Either<EarSigningKey, string> =>
  privateKey.type !== "private"
    ? Either.left("is not a private key")
    : Either.map(publicJwkOf(privateKey), (jwk) => {
      const kid = thumbprint(jwk)
      return { privateKey, publicKey: crypto.createPublicKey(privateKey), kid, jwk: { ...jwk, kid, alg: "ES256", use: "sig" } }
    })

export const generateEarKey = (): EarSigningKey =>
  Either.getOrThrow(signingKeyOf(crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey))

export const earKeyFromPem = (pem: string, file = "(PEM)"): Either.Either<EarSigningKey, EarKeyError> => {
  let key: crypto.KeyObject
  try {
    key = crypto.createPrivateKey(pem)
  } catch (e) {
    return Either.left(new EarKeyError({ file, reason: `not a PEM private key (${e instanceof Error ? e.message : String(e)})` }))
  }
  return Either.mapLeft(signingKeyOf(key), (reason) => new EarKeyError({ file, reason }))
}

/** Reads the key; when `create` and the file is missing, generates one there (0600). */
export const loadOrCreateEarKey = (file: string, options: { readonly create: boolean }): Effect.Effect<EarSigningKey, EarKeyError> =>
  Effect.gen(function*() {
    const fail = (reason: string) => new EarKeyError({ file, reason })
    if (!fs.existsSync(file)) {
      if (!options.create) return yield* fail("does not exist (ear_signing_key names a file that must hold a P-256 private key)")
      const key = generateEarKey()
      const pem = key.privateKey.export({ format: "pem", type: "pkcs8" }).toString()
      const written = yield* Effect.try({
        try: () => {
          fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
          fs.writeFileSync(file, pem, { mode: 0o600, flag: "wx" })
          return true
        },
        catch: (e) => e as NodeJS.ErrnoException
      }).pipe(Effect.catchAll((e) => (e.code === "EEXIST" ? Effect.succeed(false) : Effect.fail(fail(`cannot be written: ${e.message}`)))))
      if (written) {
        yield* Effect.logInfo(`generated the EAR signing key ${file} (P-256, kid ${key.kid})`)
        return key
      }
      // another process wrote it first: read theirs
    }
    const pem = yield* Effect.try({ try: () => fs.readFileSync(file, "utf8"), catch: (e) => fail(`cannot be read: ${(e as Error).message}`) })
    return yield* earKeyFromPem(pem, file)
  })

/** Where `ear_signing_key` points: `default` is ear-signing-key.pem in the TLS directory (tls_dir, or ca_dir for generate/default). */
export const earKeyFile = (section: { readonly ear_signing_key: string; readonly tls_dir: string; readonly ca_dir: string }): string => {
  const tlsDir = section.tls_dir === "generate" || section.tls_dir === "default" || section.tls_dir === "" ? section.ca_dir : section.tls_dir
  const value = section.ear_signing_key
  return value === "default" || value === "" ? path.join(tlsDir, EAR_KEY_FILE) : path.isAbsolute(value) ? value : path.join(tlsDir, value)
}

/** The [verifier] section's EAR key (generated only for `default`). */
export const earKeyFromSection = (section: { readonly ear_signing_key: string; readonly tls_dir: string; readonly ca_dir: string }) =>
  loadOrCreateEarKey(earKeyFile(section), { create: section.ear_signing_key === "default" || section.ear_signing_key === "" })

/** The JWKS document (RFC 7517) publishing the public keys. */
export const jwksDocument = (keys: ReadonlyArray<EarSigningKey>): { readonly keys: ReadonlyArray<EarSigningKey["jwk"]> } => ({
  keys: keys.map((k) => k.jwk)
})

/** The JWKS document as a response, for a `GET /.well-known/jwks.json` route. */
export const jwksResponse = (keys: ReadonlyArray<EarSigningKey>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(jwksDocument(keys), { contentType: JWKS_CONTENT_TYPE })

/** A key from PEM: a public key, a certificate or a private key (its public half). */
export const keyFromPem = (pem: string): Either.Either<EarVerificationKey, string> => {
  try {
    const key = pem.includes("-----BEGIN CERTIFICATE-----") ? new crypto.X509Certificate(pem).publicKey : crypto.createPublicKey(pem)
    return Either.map(publicJwkOf(key), (jwk) => ({ kid: thumbprint(jwk), jwk }))
  } catch (e) {
    return Either.left(`not a PEM public key, certificate or private key (${(e as Error).message})`)
  }
}

export const verificationKeyOf = (key: EarSigningKey): EarVerificationKey => ({ kid: key.kid, jwk: publicJwk(key.jwk) })

const publicJwk = (jwk: EcPublicJwk): EcPublicJwk => ({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y })
