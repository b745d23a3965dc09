/**
 * The identity quote and EK certificate checks of `add` against a running attest agent on the TPM
 * simulator: its quote verifies with its AK and binds its NK in PCR 16; another AK, another NK and
 * another nonce are refused with the reason; the simulator's EK certificate chains to its
 * manufacturer CA and not to another trust store.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa } from "../../src/tpm/simulator/TpmSimulator.js"
import { generateNk } from "../../src/keys/index.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { checkEkCertificate } from "../../src/tenant/ekCheck.js"
import { checkIdentityQuote } from "../../src/tenant/identity.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { closeClients, makeTestCa, request, RunningAgent, simulatedAgentLayer } from "../agent/support.js"

const agentId = "9e7d2c10-0000-4000-8000-00000000d001"
const root = mkdtempSync(join(tmpdir(), "attest-tenant-id-"))
const ca = Effect.runSync(makeTestCa(join(root, "ca")))
const env = simulatedAgentLayer({ agentId, dataDir: join(root, "agent"), trustedClientCa: ca.caPem }, { name: "m1" }, { seed: "tenant-identity" })
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

layer(Layer.orDie(env), { timeout: 120_000, excludeTestServices: true })("tenant identity and EK checks", (it) => {
  it.effect("the agent's identity quote passes; another AK, NK or nonce is refused", () =>
    Effect.gen(function*() {
      const agent = yield* RunningAgent
      const nonce = "Qz8Lm2Np4Rt6Vx8Zb0Cd"
      const reply = yield* request(agent, { cert: ca.clientCert, key: ca.clientKey }, "GET", `/v2.6/quotes/identity?nonce=${nonce}`)
      expect(reply.status).toEqual(200)
      const q = reply.body.results
      expect(checkIdentityQuote(agentId, agent.akPublic, nonce, q)).toEqual(Either.right(q.pubkey))

      const wrongNonce = checkIdentityQuote(agentId, agent.akPublic, "AAAAAAAAAAAAAAAAAAAA", q)
      expect(Either.isLeft(wrongNonce) && wrongNonce.left.message).toMatch(new RegExp(`^agent ${agentId}: identity quote refused: .*nonce`))

      const tpm = yield* Tpm
      const otherAk = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
      const wrongAk = checkIdentityQuote(agentId, otherAk.public, nonce, q)
      expect(Either.isLeft(wrongAk) && wrongAk.left.message).toMatch(/identity quote refused: .*signature.*is the agent using the AK it registered\?\)$/)

      const wrongNk = checkIdentityQuote(agentId, agent.akPublic, nonce, { ...q, pubkey: generateNk().publicPem })
      expect(Either.isLeft(wrongNk) && wrongNk.left.message).toMatch(/identity quote refused: PCR 16 is [0-9a-f]{64}, not H\(0 ‖ H\(NK\)\) = [0-9a-f]{64}: the NK it sent is not the one bound in its TPM$/)
      closeClients()
    }))

  it.effect("the EK certificate chains to the manufacturer CA and matches the EK; other stores and a missing certificate are refused", () =>
    Effect.gen(function*() {
      const tpm = yield* Tpm
      const ekCert = Option.getOrThrow(yield* tpm.ekCertificate("rsa"))
      const record = { ekcert: b64(ekCert), ek_tpm: b64(yield* tpm.ekPublic("rsa")) }
      const manufacturer = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
      const ok = yield* checkEkCertificate(agentId, record, manufacturer, true)
      expect(ok).toContain("CN=")

      const other = trustStoreOf([new crypto.X509Certificate(ca.caPem)], "/etc/other-store")
      const untrusted = yield* Effect.either(checkEkCertificate(agentId, record, other, true))
      expect(Either.isLeft(untrusted) && untrusted.left.message).toMatch(
        new RegExp(`^agent ${agentId}: EK certificate refused: certificate .* is issued by .*, which is not in the trust store /etc/other-store$`)
      )

      const otherEk = { ...record, ek_tpm: b64((yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })).public) }
      const mismatch = yield* Effect.either(checkEkCertificate(agentId, otherEk, manufacturer, true))
      expect(Either.isLeft(mismatch) && mismatch.left.message).toEqual(`agent ${agentId}: EK certificate refused: the EK certificate is for a different key than the EK`)

      const none = yield* Effect.either(checkEkCertificate(agentId, { ...record, ekcert: null }, manufacturer, true))
      expect(Either.isLeft(none) && none.left.message).toEqual(
        `agent ${agentId} registered without an EK certificate; set [tenant] require_ek_cert = false to enrol it on its EK alone`
      )
      expect(yield* checkEkCertificate(agentId, { ...record, ekcert: null }, manufacturer, false)).toEqual(undefined)
    }))
})
