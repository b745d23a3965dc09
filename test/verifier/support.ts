/**
 * The verifier's domain on a real database: repositories and services over a fresh SQLite file or
 * PostgreSQL schema, `VerifierConfig.test`, and a PollerControl that records what the domain asked
 * of the loop. Valid creation bodies come from the recorded Keylime exchanges.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { DbLive, type DatabaseOptions } from "../../src/db/Sql.js"
import { VerifierConfig } from "../../src/config/services.js"
import type { VerifierOptions } from "../../src/config/sections.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { PolicyCache } from "../../src/verifier/domain/policy/PolicyCache.js"
import { Policies } from "../../src/verifier/domain/policy/Policies.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import { needsPostgres } from "../support/requirements.js"
import { readVectorText } from "../support/vectors.js"

export type PollerCall = { readonly op: "start" | "stop"; readonly agentId: string }

/** A PollerControl that records calls; `owned` lists the agents "this process" polls. */
export const recordingPoller = (owned: ReadonlySet<string> = new Set()) => {
  const calls: Array<PollerCall> = []
  const layer = Layer.succeed(PollerControl, {
    start: (agentId) => Effect.sync(() => void calls.push({ op: "start", agentId })),
    stop: (agentId) => Effect.sync(() => void calls.push({ op: "stop", agentId })),
    isOwned: (agentId) => Effect.succeed(owned.has(agentId))
  })
  return { calls, layer }
}

/** Test defaults: the replay's settings (keylime-wire README "How to use"). */
export const testConfig = (o: Partial<VerifierOptions> = {}) =>
  VerifierConfig.test({
    quote_interval: 2,
    retry_interval: 1,
    max_retries: 2,
    exponential_backoff: false,
    enable_agent_mtls: true,
    verifier_id: "default",
    ...o
  })

/** Every verifier repository and service over the database, config and poller given. */
export const verifierLayer = (
  db: DatabaseOptions,
  config: Partial<VerifierOptions> = {},
  poller: Layer.Layer<PollerControl> = recordingPoller().layer
) =>
  Layer.mergeAll(
    Agents.Default,
    Policies.Default,
    AgentRepo.Default,
    RuntimePolicyRepo.Default,
    MbPolicyRepo.Default,
    NotificationOutbox.Default,
    PolicyCache.withCapacity(4)
  ).pipe(Layer.provideMerge(Layer.mergeAll(DbLive(db, "verifier"), testConfig(config), poller)))

export const pgAvailable = await needsPostgres()
export const backends = [["sqlite", true], ["pg", pgAvailable]] as const

// --- recorded exchanges ------------------------------------------------------------------------

export interface WireRecord {
  readonly id: string
  readonly request: { readonly method: string; readonly path: string; readonly body?: unknown; readonly query?: Record<string, string> }
  readonly response: { readonly status: number | null; readonly body: unknown }
  readonly volatile?: ReadonlyArray<string>
}

const decodeRecord = Schema.decodeUnknownSync(Schema.parseJson(Schema.Unknown))

export const verifierRecords: ReadonlyArray<WireRecord> = readVectorText("keylime-wire", "verifier.jsonl")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => decodeRecord(l) as WireRecord)

export const record = (id: string): WireRecord => {
  const r = verifierRecords.find((x) => x.id === id)
  if (r === undefined) throw new Error(`no recorded exchange ${id}`)
  return r
}

/** The body keylime_tenant sends (ver-add-ok): agent at 127.0.0.1:1, the vector AK, an agent cert. */
export const validBody = (): Record<string, unknown> => ({ ...(record("ver-add-ok").request.body as Record<string, unknown>) })

/** The runtime policy text of ver-allowlist-add-ok (base64 of a Keylime v1 policy). */
export const recordedPolicyBase64 = (): string => (record("ver-allowlist-add-ok").request.body as { runtime_policy: string }).runtime_policy

/** All rows of the verifier's tables, for "nothing stored" assertions. */
export const snapshotTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    agents: yield* sql`SELECT * FROM verifier_agents ORDER BY agent_id`,
    runtime: yield* sql`SELECT * FROM verifier_runtime_policies ORDER BY name`,
    mb: yield* sql`SELECT * FROM verifier_mb_policies ORDER BY name`
  }
})

/** A PollerControl as a polling process has it: every agent started here is owned until stopped. */
export const owningPoller = () => {
  const owned = new Set<string>()
  const calls: Array<PollerCall> = []
  const layer = Layer.succeed(PollerControl, {
    start: (agentId) => Effect.sync(() => void (owned.add(agentId), calls.push({ op: "start", agentId }))),
    stop: (agentId) => Effect.sync(() => void (owned.delete(agentId), calls.push({ op: "stop", agentId }))),
    isOwned: (agentId) => Effect.succeed(owned.has(agentId))
  })
  return { calls, owned, layer }
}
