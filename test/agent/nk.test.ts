/**
 * The NK survives an agent restart (issue 8, item 10): a verifier that fetched the NK with a full
 * quote keeps checking partial quotes (no pubkey) against it after the agent restarts, with the
 * quote verification and PCR 16 binding rule of the TPM core: PCR 16 = H(0 ‖ H(NK PEM)).
 */
import { expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, Layer } from "effect"
import { NK_FILE } from "../../src/agent/nkStore.js"
import { verifyQuoteString } from "../../src/tpm/verifyQuote.js"
import { closeClients, makeTestCa, request, RunningAgent, simulatedAgentLayer, tempDir } from "./support.js"

const sha256 = (...parts: Array<Uint8Array | string>) => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return new Uint8Array(h.digest())
}
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? new Uint8Array()).toString("hex")
const nonce = "Nk7restartQuote00042"

/** What a verifier does with an integrity quote: verify it with the AK, then check the PCR 16 binding of the NK it holds. */
const pcr16Binds = (akPublic: Uint8Array, quote: string, nkPem: string): boolean => {
  const verified = verifyQuoteString(akPublic, quote, new TextEncoder().encode(nonce), { hashAlg: "sha256" })
  if (Either.isLeft(verified)) throw new Error(`quote does not verify: ${verified.left.message}`)
  const pcr16 = verified.right.pcrs.find((b) => b.hash === "sha256")!.values.get(16)
  return hex(pcr16) === hex(sha256(new Uint8Array(32), sha256(nkPem)))
}

it.live("keeps the NK across an agent restart, so partial quotes keep binding the NK a verifier holds", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-agent-nk-")
    const ca = yield* makeTestCa(join(dir, "ca"))
    const admin = { cert: ca.clientCert, key: ca.clientKey }
    yield* Effect.addFinalizer(() => Effect.sync(closeClients))
    const agentLayer = () =>
      simulatedAgentLayer(
        { agentId: "nk-restart-agent", dataDir: join(dir, "agent"), trustedClientCa: ca.caPem },
        { name: "nk-machine" },
        { stateFile: join(dir, "simulated-tpm.json") }
      )
    const integrity = (partial: 0 | 1) =>
      Effect.flatMap(RunningAgent, (agent) =>
        Effect.map(request(agent, admin, "GET", `/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=${partial}`), (r) => ({
          agent,
          results: r.body.results as { quote: string; pubkey?: string }
        })))
    const run = <A, E>(effect: Effect.Effect<A, E, RunningAgent>) =>
      Effect.scoped(Effect.flatMap(Layer.build(agentLayer()), (ctx) => Effect.provide(effect, ctx)))

    // the verifier's first contact: a full quote gives it the NK
    const held = yield* run(Effect.gen(function*() {
      const full = yield* integrity(0)
      expect(pcr16Binds(full.agent.akPublic, full.results.quote, full.results.pubkey!)).toBe(true)
      const partial = yield* integrity(1)
      expect(partial.results.pubkey).toBeUndefined()
      expect(pcr16Binds(partial.agent.akPublic, partial.results.quote, full.results.pubkey!)).toBe(true)
      return full.results.pubkey!
    }))

    // a plain agent restart: the next partial quote still binds the NK the verifier holds
    yield* run(Effect.gen(function*() {
      const partial = yield* integrity(1)
      expect(pcr16Binds(partial.agent.akPublic, partial.results.quote, held)).toBe(true)
      expect((yield* integrity(0)).results.pubkey).toBe(held)
    }))
    expect(statSync(join(dir, "agent", NK_FILE)).mode & 0o777).toBe(0o600)

    // a damaged NK file is replaced by a new NK (and the binding follows the new one)
    writeFileSync(join(dir, "agent", NK_FILE), "not a key", { mode: 0o600 })
    yield* run(Effect.gen(function*() {
      const full = yield* integrity(0)
      expect(full.results.pubkey).not.toBe(held)
      expect(pcr16Binds(full.agent.akPublic, full.results.quote, full.results.pubkey!)).toBe(true)
    }))
  }).pipe(Effect.scoped), 120_000)
