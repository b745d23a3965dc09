/**
 * verify/evidence as an EAR over HTTPS: `Accept: application/eat+jwt` answers the verdict as an
 * ES256 JWT (src/ear) signed with the verifier's key, published at GET /.well-known/ear-jwks.json
 * (public); a valid attestation is affirming, a refused one contraindicated with its failures; an
 * input error stays the 400 envelope.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { keysFromJwks } from "../../src/ear/key.js"
import { EAR_MEDIA_TYPE, verifyEar } from "../../src/ear/token.js"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "./apiHarness.js"
import { record } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

describe("verify/evidence answered as an EAR", () => {
  it.scopedLive("signs the verdict; the published JWKS verifies it; status follows the failures", () =>
    Effect.gen(function*() {
      const v = yield* startVerifier({ pki, db: yield* testDatabase("sqlite") })
      const jwks = yield* vcall(pki, v, { method: "GET", path: "/.well-known/ear-jwks.json", who: "none" })
      expect(jwks.status).toBe(200)
      expect(jwks.contentType).toMatch(/^application\/jwk-set\+json/)
      const keys = Either.getOrThrow(keysFromJwks(jwks.body))
      expect(keys.length).toBe(1)

      const ask = (id: string) =>
        vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", who: "none", json: record(id).request.body, headers: { accept: EAR_MEDIA_TYPE } })
      const ok = yield* ask("ver-evidence-ok-runtime-policy")
      expect(ok.status).toBe(200)
      expect(ok.contentType).toMatch(/^application\/eat\+jwt/)
      const good = yield* verifyEar(ok.body, keys)
      expect(good.claims.eat_nonce).toBe("TestNonce1234567890A")
      expect(good.claims.iss).toBe("default")
      expect(good.claims.sub).toMatch(/^tpm-ak:sha256:[0-9a-f]{64}$/)
      expect(good.claims.submods["tpm"]!["ear.status"]).toBe("affirming")

      const bad = yield* verifyEar((yield* ask("ver-evidence-policy-fail")).body, keys)
      const tpm = bad.claims.submods["tpm"]!
      expect(tpm["ear.status"]).toBe("contraindicated")
      expect((tpm["ear.attest.failures"] as ReadonlyArray<{ type: string }>).map((f) => f.type)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])

      const input = summary(yield* ask("ver-evidence-missing-quote"))
      expect(input.status).toBe(400)
      expect(input.text).toBe("Bad Request")
      // without the Accept header: the JSON envelope as before
      const plain = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: record("ver-evidence-ok-runtime-policy").request.body }))
      expect(plain.results).toMatchObject({ valid: true })
    }))
})
