/**
 * EAR (src/ear): tokens verify with the published key (JWKS) and fail when any character changes or
 * another key is used; the status follows the verdict (valid → affirming, recoverable below the
 * stopping severity → warning, stopping or irrecoverable → contraindicated, request problems only
 * → none); the claims carry the draft's registered names; the key is generated once, 0600.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Failure } from "../../schemas/Evidence.js"
import {
  appraise,
  EAR_PROFILE,
  earKeyFile,
  eatNonce,
  fromEvaluation,
  fromPlainVerdict,
  generateEarKey,
  issueEar,
  JWKS_CONTENT_TYPE,
  jwksDocument,
  jwksResponse,
  keyFromPem,
  keysFromJwks,
  loadOrCreateEarKey,
  signEar,
  verificationKeyOf,
  verifyEar
} from "../../src/ear/index.js"
import { defaultSeverityPolicy, makeSeverityPolicy, rateFailures } from "../../src/attestation/evaluate/severity.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const key = generateEarKey()
const options = { verifierId: "verifier-1", build: "attest 0.1.0" }
const fail = (type: string): Failure => ({ type, context: { message: `${type} happened` } })
const tpmChecks = { quote: true, ima: true, boot: true }

eachCryptoPort("EAR tokens", () => {
  it.effect("verify with the key published as JWKS, with the draft's claims", () => Effect.gen(function*() {
    const token = Either.getOrThrow(signEar({ agentId: "agent-1", failures: [], appraised: tpmChecks, nonce: "k5a0PtTvWGYRTX8RGxWm" }, key, options, 1_700_000_000))
    const keys = Either.getOrThrow(keysFromJwks(JSON.stringify(jwksDocument([key]))))
    const verified = yield* verifyEar(token, keys)
    expect(verified.kid).toBe(key.kid)
    expect(verified.claims).toEqual({
      eat_profile: EAR_PROFILE,
      iat: 1_700_000_000,
      iss: "verifier-1",
      sub: "agent-1",
      "ear.verifier-id": { build: "attest 0.1.0", developer: "attest" },
      eat_nonce: "k5a0PtTvWGYRTX8RGxWm",
      submods: { tpm: { "ear.status": "affirming", "ear.trustworthiness-vector": { "instance-identity": 2, executables: 2, hardware: 2 } } }
    })
    const header = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as unknown
    expect(header).toEqual({ alg: "ES256", typ: "JWT", kid: key.kid })
  }))

  it.effect("fail when any character of the token changes, or with another key", () => Effect.gen(function*() {
    const token = Either.getOrThrow(signEar({ agentId: "agent-1", failures: [fail("ima.validation.ima-ng.not_in_allowlist")], appraised: tpmChecks }, key, options, 1_700_000_000))
    const keys = [verificationKeyOf(key)]
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
    const accepted: Array<number> = []
    for (let i = 0; i < token.length; i++) {
      const c = token[i]!
      const other = alphabet[(alphabet.indexOf(c) + 1 + (i % 7)) % alphabet.length]!
      const changed = token.slice(0, i) + (other === c ? "A" : other) + token.slice(i + 1)
      if (Either.isRight(yield* Effect.either(verifyEar(changed, keys)))) accepted.push(i)
    }
    expect(accepted).toEqual([])
    const other = generateEarKey()
    expect((yield* Effect.flip(verifyEar(token, [verificationKeyOf(other)]))).reason).toEqual("unknown_key")
    expect((yield* Effect.flip(verifyEar(token, [{ kid: key.kid, jwk: verificationKeyOf(other).jwk }]))).reason).toEqual("signature")
    expect(Either.isLeft(yield* Effect.either(verifyEar("not.a.jwt.at.all", keys)))).toBe(true)
  }))

  it.effect("are issued at Clock time", () =>
    Effect.gen(function*() {
      const token = yield* issueEar({ agentId: "agent-1", failures: [], appraised: {} }, key, options)
      expect((yield* verifyEar(token, [verificationKeyOf(key)])).claims.iat).toBe(0)
    }))

  it("carry the nonce as text (10-74 characters) or base64url bytes (8-64), and refuse others", () => {
    expect(eatNonce("k5a0PtTvWGYRTX8RGxWm")).toEqual(Either.right("k5a0PtTvWGYRTX8RGxWm"))
    expect(eatNonce(new Uint8Array(32).fill(0xff))).toEqual(Either.right("_".repeat(42) + "8"))
    expect(Either.isLeft(eatNonce("short"))).toBe(true)
    expect(Either.isLeft(signEar({ agentId: "a", failures: [], appraised: {}, nonce: new Uint8Array(4) }, key, options, 1))).toBe(true)
  })
})

describe("EAR status and trustworthiness vector", () => {
  const lowIma = Either.getOrThrow(makeSeverityPolicy(["info", "emergency"], [{ event_id: "ima\\..*", severity_label: "info" }, { event_id: ".*", severity_label: "emergency" }]))
  const evaluation = (failures: ReadonlyArray<Failure>, policy = defaultSeverityPolicy) => ({
    failures,
    severity: rateFailures(policy, failures),
    claims: { type: "tpm" as const, hash_alg: "sha256", pcrs: {}, clock: { clock: "0", reset_count: 0, restart_count: 0, safe: true }, ima: { entries: 3, matched: 3, next_entry: 3 } }
  })

  it("is affirming for a valid verdict, claiming only the checks that ran", () => {
    expect(appraise(fromEvaluation("a", evaluation([])))).toEqual({ status: "affirming", vector: { "instance-identity": 2, executables: 2 } })
  })

  it("is warning for recoverable failures below the severity that stops polling", () => {
    expect(appraise(fromEvaluation("a", evaluation([fail("ima.validation.ima-ng.not_in_allowlist")], lowIma))))
      .toEqual({ status: "warning", vector: { "instance-identity": 2, executables: 33 } })
  })

  it("is contraindicated for recoverable failures at the stopping severity (Keylime's default policy)", () => {
    expect(appraise(fromEvaluation("a", evaluation([fail("ima.validation.ima-ng.not_in_allowlist")])))).toMatchObject({ status: "contraindicated" })
  })

  it("is contraindicated for an irrecoverable failure, and when a claim is contraindicated whatever the severity", () => {
    expect(appraise(fromEvaluation("a", { ...evaluation([fail("qoute_validation.quote_validation")]), claims: undefined })))
      .toEqual({ status: "contraindicated", vector: { "instance-identity": 99 } })
    expect(appraise(fromEvaluation("a", evaluation([fail("ima.validator.ima-sig.invalid_signature")], lowIma))))
      .toEqual({ status: "contraindicated", vector: { "instance-identity": 2, executables: 96 } })
    expect(appraise({ agentId: "a", failures: [fail("measured_boot.policy_example")], appraised: { quote: true, boot: true }, stopPolling: false }))
      .toEqual({ status: "contraindicated", vector: { "instance-identity": 2, hardware: 96 } })
  })

  it("is none when the evidence could not be appraised (request problems only)", () => {
    expect(appraise(fromPlainVerdict({ agentId: "a", valid: false, failures: [fail("default.missing_param")] })))
      .toEqual({ status: "none", vector: { "instance-identity": 1 } })
  })

  it.effect("reads a plain verdict's claims and lists attest's failure types in the extension claim", () => Effect.gen(function*() {
    const verdict = fromPlainVerdict({ agentId: "a", valid: false, failures: [fail("pcr_validation.invalid_pcr_16")], claims: { type: "tpm", boot_aggregates: {} }, nonce: "0123456789ab" })
    const claims = (yield* verifyEar(Either.getOrThrow(signEar(verdict, key, options, 5)), [verificationKeyOf(key)])).claims
    expect(claims.submods["tpm"]).toEqual({
      "ear.status": "contraindicated",
      "ear.trustworthiness-vector": { "instance-identity": 96, hardware: 2 },
      "ear.attest.failures": [{ type: "pcr_validation.invalid_pcr_16", message: "pcr_validation.invalid_pcr_16 happened" }]
    })
    const tee = fromPlainVerdict({ agentId: "a", valid: true, failures: [], claims: { type: "tee", claims: {} } })
    expect(appraise(tee)).toEqual({ status: "affirming", vector: { "instance-identity": 2, hardware: 2, "runtime-opaque": 2 } })
  }))
})

describe("EAR signing key", () => {
  it.effect("is generated once (0600) in the TLS directory for `default`, and the same key is read back", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-ear-key-"))
      const file = earKeyFile({ ear_signing_key: "default", tls_dir: "generate", ca_dir: dir })
      expect(file).toBe(join(dir, "ear-signing-key.pem"))
      const first = yield* loadOrCreateEarKey(file, { create: true })
      expect(statSync(file).mode & 0o777).toBe(0o600)
      const again = yield* loadOrCreateEarKey(file, { create: true })
      expect(again.kid).toBe(first.kid)
      expect(Either.getOrThrow(keyFromPem(readFileSync(file, "utf8"))).kid).toBe(first.kid)
      const missing = yield* Effect.flip(loadOrCreateEarKey(join(dir, "configured.pem"), { create: false }))
      expect(missing.message).toContain("configured.pem: does not exist")
    }))

  it("is published as a JWKS response with its content type", () => {
    const response = jwksResponse([key])
    expect(response.headers["content-type"]).toBe(JWKS_CONTENT_TYPE)
    expect(jwksDocument([key]).keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig", kid: key.kid })
  })
})
