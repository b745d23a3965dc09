/**
 * Two agents in one process (as under `attest up`): every log line an agent writes, at start and
 * while serving (a revocation notice here), carries its own id as the `agent_id` annotation.
 */
import { expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, HashMap, Layer, Logger, Option } from "effect"
import { vectorPath } from "../support/vectors.js"
import { closeClients, makeTestCa, request, RunningAgent, simulatedAgentLayer, tempDir } from "./support.js"

interface Line {
  readonly message: string
  readonly agentId: string | undefined
}

it.live("annotates every log line of an agent with its id, at start and while serving a revocation notice", () =>
  Effect.gen(function*() {
    const lines: Array<Line> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ annotations, message }) =>
        void lines.push({
          message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
          agentId: Option.getOrUndefined(HashMap.get(annotations, "agent_id")) as string | undefined
        })
      )
    )
    const dir = yield* tempDir("attest-agent-logs-")
    const ca = yield* makeTestCa(join(dir, "ca"))
    const admin = { cert: ca.clientCert, key: ca.clientKey }
    yield* Effect.addFinalizer(() => Effect.sync(closeClients))
    const msg = readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/test_ok.json"), "utf8")
    const signature = readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/revocation.sig"), "utf8").trim()

    for (const id of ["logs-agent-1", "logs-agent-2"]) {
      yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(
          simulatedAgentLayer({ agentId: id, dataDir: join(dir, id), trustedClientCa: ca.caPem }, { name: id }).pipe(Layer.provide(capture))
        )
        const agent = yield* Effect.provide(RunningAgent, ctx)
        const r = yield* request(agent, admin, "POST", "/v2.5/notifications/revocation", { msg, signature })
        expect(r.status).toBe(200)
      }))
    }
    for (const id of ["logs-agent-1", "logs-agent-2"]) {
      const notice = lines.filter((l) => l.message.startsWith("received a revocation notice") && l.agentId === id)
      expect(notice, id).toHaveLength(1)
      expect(lines.some((l) => l.message.startsWith("agent starting") && l.agentId === id), id).toBe(true)
    }
    // nothing the agents logged is left without an id (the simulated machines log as themselves)
    expect(lines.filter((l) => l.agentId === undefined && !l.message.startsWith("simulated machine ")).map((l) => l.message)).toEqual([])
  }).pipe(Effect.scoped), 120_000)
