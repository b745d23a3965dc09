/**
 * The agent's answers decoded by an HttpApiClient built from AgentApi, over real mTLS (the admin
 * certificate of a test CA, trusting exactly the agent's own certificate, as a verifier pins
 * mtls_cert): integrity quotes (partial 0 with the NK, IMA list and boot log; partial 1 without the
 * NK), the identity quote, pubkey, info, version, and the agent's refusals as typed errors with the
 * agent's status text. No hand-written JSON on the client side.
 */
import { HttpApiClient, HttpClient } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { createHash } from "node:crypto"
import { join } from "node:path"
import { BadRequest } from "../../schemas/Envelope.js"
import { AgentApi, AgentVersionApi } from "../../src/agent/Api.js"
import { parseEventLogBase64 } from "../../src/boot/index.js"
import { makeHttpsClient } from "../../src/http/client.js"
import { replayPcr10 } from "../../src/ima/replay.js"
import { verifyQuoteString } from "../../src/tpm/verifyQuote.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, type TestCa, tempDir } from "./support.js"

const agentId = "d432fbb3-d2f1-4a97-9ef7-75bd81c0c11e"
const nonce = "Cl1entDecodes20Chars"

class Env extends Context.Tag("test/agent/client/Env")<Env, { readonly ca: TestCa }>() {}

const TestLayer = Layer.unwrapScoped(Effect.gen(function*() {
  const dir = yield* tempDir("attest-agent-client-")
  const ca = yield* makeTestCa(join(dir, "ca"))
  yield* Effect.addFinalizer(() => Effect.sync(closeClients))
  return simulatedAgentLayer({ agentId, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem }, { name: "client-machine" }, { seed: "client-agent" })
    .pipe(Layer.merge(Layer.succeed(Env, { ca })))
}))

const sha256 = (...parts: Array<Uint8Array | string>) => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? new Uint8Array()).toString("hex")

/** The verifier's view: an mTLS HttpClient (its certificate, the agent's pinned certificate) and the typed clients. */
const clients = Effect.gen(function*() {
  const agent = yield* RunningAgent
  const { ca } = yield* Env
  const http = yield* makeHttpsClient({ ca: agent.serverCert, cert: ca.clientCert, key: ca.clientKey })
  const withHttp = Effect.provideService(HttpClient.HttpClient, http)
  return {
    agent,
    api: yield* withHttp(HttpApiClient.make(AgentApi, { baseUrl: `${agent.url}/v2.5` })),
    versions: yield* withHttp(HttpApiClient.make(AgentVersionApi, { baseUrl: agent.url }))
  }
})

const pcrsOf = (akPublic: Uint8Array, quote: string) => {
  const r = verifyQuoteString(akPublic, quote, new TextEncoder().encode(nonce), { hashAlg: "sha256" })
  if (Either.isLeft(r)) throw new Error(`quote does not verify: ${r.left.message}`)
  return r.right.pcrs.find((b) => b.hash === "sha256")!.values
}

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("AgentApi client against a running agent", (it) => {
  it.scoped("decodes integrity quotes (partial 0 and 1), the identity quote, pubkey, info and version", () =>
    Effect.gen(function*() {
      const { agent, api, versions } = yield* clients

      const full = yield* api.quotes.integrity({ urlParams: { nonce, mask: "0x4ff", partial: "0" } })
      const pcrs = pcrsOf(agent.akPublic, full.quote)
      expect([full.hash_alg, full.enc_alg, full.sign_alg, full.ima_measurement_list_entry]).toEqual(["sha256", "rsa2048", "rsassa", 0])
      expect(hex(pcrs.get(16))).toBe(hex(sha256(new Uint8Array(32), sha256(full.pubkey!))))
      expect(hex(Either.getOrThrow(replayPcr10(full.ima_measurement_list!, ["sha256"]))["sha256"])).toBe(hex(pcrs.get(10)))
      expect(Either.isRight(parseEventLogBase64(full.mb_measurement_list!))).toBe(true)

      const partial = yield* api.quotes.integrity({ urlParams: { nonce, mask: "0x400", partial: "1", ima_ml_entry: 1 } })
      expect(partial.pubkey).toBeUndefined()
      expect(partial.mb_measurement_list).toBeUndefined()
      expect(partial.ima_measurement_list_entry).toBe(1)
      pcrsOf(agent.akPublic, partial.quote)

      const identity = yield* api.quotes.identity({ urlParams: { nonce } })
      expect([...pcrsOf(agent.akPublic, identity.quote).keys()]).toEqual([16])
      expect(identity.pubkey).toBe(full.pubkey)
      expect(yield* api.keys.pubkey()).toEqual({ pubkey: full.pubkey })
      expect(yield* api.agent.info()).toEqual({ agent_uuid: agentId, tpm_hash_alg: "sha256", tpm_enc_alg: "rsa2048", tpm_sign_alg: "rsassa", ak_handle: 0 })
      expect(yield* versions.version.get()).toEqual({
        supported_version: "2.6",
        supported_versions: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]
      })
    }))

  it.scoped("decodes the agent's refusals into typed errors with its status text", () =>
    Effect.gen(function*() {
      const { api } = yield* clients
      expect(yield* Effect.flip(api.quotes.integrity({ urlParams: { nonce: "abc", mask: "0x400", partial: "0" } }))).toEqual(
        new BadRequest({ message: "Nonce should be 20 letters and digits, got 3: abc" })
      )
      expect(yield* Effect.flip(api.keys.verify({ urlParams: { challenge: "abcdefghij0123456789" } }))).toEqual(
        new BadRequest({ message: "Bootstrap key not yet available." })
      )
      expect(yield* Effect.flip(api.keys.vkey({ payload: { encrypted_key: "not base64!" } }))).toEqual(
        new BadRequest({ message: "Invalid base64 encoding in encrypted_key: invalid base64 text" })
      )
    }))
})
