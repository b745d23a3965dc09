/**
 * kill -9 of a real `attest verifier` process while it polls two agents (SQLite under its data
 * directory), then a new process on the same directory: every agent is polled again right after
 * start (not a quote interval later than it was due), from the IMA offset stored before the kill,
 * so no list is verified again from entry 0, and attestations go on. The agents run in this test
 * process on simulated TPMs; their machines record which IMA entry each quote asked for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { RunningAgent } from "../../src/agent/Agent.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { agentStatus, recordedAgent, verifierAdmin } from "../faults/support.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { startAttest } from "../support/attestProcess.js"
import { agentBody, waitFor as waitUntil } from "./pollerSupport.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const QUOTE_INTERVAL = 1

describe("verifier killed with SIGKILL mid-poll", () => {
  it.live("resumes every agent at start from its stored IMA offset", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-kill9-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const config = join(dir, "attest.toml")
      writeFileSync(config, [
        "[verifier]",
        "port = 0",
        `tls_dir = "${ca.dir}"`,
        `ca_dir = "${ca.dir}"`,
        `data_dir = "${join(dir, "verifier")}"`,
        "metrics_port = 0",
        `quote_interval = ${QUOTE_INTERVAL}`,
        "enabled_revocation_notifications = []",
        ""
      ].join("\n"))

      const agents = yield* Effect.forEach(["kill9-agent-1", "kill9-agent-2"], (id) =>
        Effect.gen(function*() {
          const recorded = recordedAgent(id, join(dir, id), ca.caPem)
          const ctx = yield* Layer.build(recorded.layer)
          return { id, asked: recorded.asked, agent: Context.get(ctx, RunningAgent), machine: Context.get(ctx, SimulatedMachine) }
        }))

      const start = Effect.gen(function*() {
        const run = startAttest(["verifier", "--config", config])
        yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
        const line = yield* Effect.promise(() => run.waitFor(LISTENING, 120_000))
        return { run, url: LISTENING.exec(line.text)![1]!, listeningAt: Date.now() }
      })
      const admin = verifierAdmin(ca)
      const status = (url: string, id: string) => agentStatus(admin, url, id)
      const waitFor = <A>(what: string, read: Effect.Effect<A>, ok: (a: A) => boolean) => waitUntil(what, read, ok, 120_000)

      const first = yield* start
      for (const a of agents) {
        const added = yield* admin(first.url, "POST", `/v2.6/agents/${a.id}`, agentBody({ port: a.agent.port, akPublic: a.agent.akPublic, serverCert: a.agent.serverCert }, { v: false }))
        expect({ agent: a.id, status: added.status }).toEqual({ agent: a.id, status: 200 })
      }
      for (const a of agents) yield* waitFor(`${a.id} attested twice`, status(first.url, a.id), (s) => s.attestation_count >= 2)
      // the machines grow their lists; the verifier moves its offsets past the new entries
      for (const a of agents) {
        yield* a.machine.measure("/usr/bin/bash", "GNU bash 5.2")
        yield* a.machine.measure("/usr/bin/cat", "coreutils 9.1 cat")
      }
      const entries = yield* Effect.forEach(agents, (a) => a.machine.entries)
      yield* Effect.forEach(agents, (a, i) => waitFor(`${a.id} asked from entry ${entries[i]}`, Effect.sync(() => a.asked), (asked) => asked.some((q) => q.entry === entries[i])))

      // kill -9: no shutdown of any kind
      first.run.child.kill("SIGKILL")
      expect(yield* Effect.promise(() => first.run.exited)).toBeNull()
      const before = agents.map((a) => a.asked.length)

      const second = yield* start
      for (const [i, a] of agents.entries()) {
        yield* waitFor(`${a.id} polled after the restart`, Effect.sync(() => a.asked.length), (n) => n > before[i]!)
        const resumed = a.asked.slice(before[i]!)
        // the first quote of the new process asks for the offset reached before the kill, not entry 0
        expect({ agent: a.id, entry: resumed[0]!.entry }).toEqual({ agent: a.id, entry: entries[i] })
        // and it comes with the start, not a quote interval (or a retry backoff) later: generous for a loaded machine
        expect(resumed[0]!.at - second.listeningAt).toBeLessThan(QUOTE_INTERVAL * 1000 + 15_000)
        const counted = (yield* status(second.url, a.id)).attestation_count
        const after = yield* waitFor(`${a.id} attested after the restart`, status(second.url, a.id), (s) => s.attestation_count > counted)
        expect({ agent: a.id, state: after.operational_state }).toEqual({ agent: a.id, state: 3 })
      }
      expect(yield* Effect.promise(() => second.run.stop())).toBe(0)
    }).pipe(Effect.scoped), 400_000)
})
