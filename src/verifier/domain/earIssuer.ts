/**
 * The verifier's EAR signer (src/ear): the key `verify/evidence` signs results with when a client
 * asks for `Accept: application/eat+jwt`, published as a JWKS at `GET /.well-known/ear-jwks.json`
 * (public, unversioned). `VerifierFromConfig` provides the `[verifier] ear_signing_key` (default:
 * ear-signing-key.pem in the TLS directory, generated 0600); a server built without it gets a key
 * generated at start, which lives as long as the process (its tokens verify against its JWKS only).
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { type EarKeyError, earKeyFromSection, type EarSigningKey, generateEarKey, jwksResponse } from "../../ear/key.js"
import type { VerifierOptions } from "../../config/sections.js"

export interface EarIssuerShape {
  readonly key: EarSigningKey
}

export class EarIssuer extends Context.Reference<EarIssuer>()("attest/verifier/EarIssuer", {
  defaultValue: (): EarIssuerShape => ({ key: generateEarKey() })
}) {
  /** The key of `ear_signing_key` (created when it is `default` and missing). */
  static fromSection(c: VerifierOptions): Layer.Layer<EarIssuer, EarKeyError> {
    return Layer.effect(EarIssuer, Effect.map(earKeyFromSection(c), (key) => ({ key })))
  }
}

/** Where the JWKS is served. */
export const EAR_JWKS_PATH = "/.well-known/ear-jwks.json"

/** `GET /.well-known/ear-jwks.json` on the verifier's router. */
export const serveEarJwks = HttpApiBuilder.Router.use((router) =>
  router.get(EAR_JWKS_PATH, Effect.map(EarIssuer, (issuer): HttpServerResponse.HttpServerResponse => jwksResponse([issuer.key])))
)
