/**
 * A verifier restart, on SQLite and PostgreSQL: the poller layer is closed mid-polling and a new
 * one started on the same database; the agent resumes with its IMA progress (the first request of
 * the new poller asks for the stored offset, as a partial quote: the NK is known), so nothing is
 * verified again from entry 0, and its count keeps rising.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Layer, Option, Scope } from "effect"
import { join } from "node:path"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { decodeEvaluationState } from "../../src/attestation/evaluate/state.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { testDatabase } from "../support/db.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { agentBody, newClientLog, pollerBase, pollerOver, waitFor } from "./pollerSupport.js"
import { backends, verifierLayer } from "./support.js"

const agentId = "restart0-d2f1-4a97-9ef7-75bd81c0c001"

for (const [backend, available] of backends) describe.skipIf(!available)(`verifier restart on ${backend}`, () => {
  it.scopedLive("resumes polling from the stored IMA offset", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-poller-restart-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const agentCtx = yield* Layer.build(simulatedAgentLayer(
        { agentId, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem },
        { name: "restart-machine" },
        { seed: `restart-${backend}` }
      ))
      const agent = Context.get(agentCtx, RunningAgent)
      const machine = Context.get(agentCtx, SimulatedMachine)
      const db = yield* testDatabase(backend)
      const config = { quote_interval: 1, enabled_revocation_notifications: [] }
      // the domain on its own (no loop in this "process"): the agent is stored START
      const domain = yield* Layer.build(verifierLayer(db, config))
      yield* Context.get(domain, Agents).add(agentId, agentBody(agent, { v: false }))
      const repo = Context.get(domain, AgentRepo)
      const row = Effect.map(repo.find(agentId), Option.getOrThrow)

      // the first verifier process resumes it (START is active) and attests, the list growing
      const first = newClientLog()
      const scope1 = yield* Scope.make()
      yield* Layer.buildWithScope(pollerOver(first).pipe(Layer.provide(pollerBase(db, ca, config))), scope1)
      yield* waitFor("2 attestations", row, (r) => r.attestation_count >= 2)
      yield* machine.measure("/usr/bin/bash", "GNU bash 5.2")
      yield* machine.measure("/usr/bin/cat", "coreutils 9.1 cat")
      yield* waitFor("the new entries attested", row, (r) => r.attestation_count >= 4)
      yield* Scope.close(scope1, Exit.void)

      const stopped = yield* row
      const progress = Either.getOrThrow(decodeEvaluationState(stopped.evaluation_state!))
      expect(progress.ima.nextEntry).toBe(8)
      expect(stopped.operational_state).toBe(3)

      // a new process on the same database resumes from that offset
      const second = newClientLog()
      yield* Layer.build(pollerOver(second).pipe(Layer.provide(pollerBase(db, ca, config))))
      const resumed = yield* waitFor("an attestation after the restart", row, (r) => r.attestation_count > stopped.attestation_count)
      expect(second.quotes[0]!.request).toMatchObject({ imaEntry: 8, partial: 1 })
      expect(second.quotes.every((q) => q.request.imaEntry === 8)).toBe(true)
      expect(resumed.operational_state).toBe(3)
    }), 240_000)
})
