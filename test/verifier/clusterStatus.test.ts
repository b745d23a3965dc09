/**
 * `attest verifier cluster status` (issue 24) on real PostgreSQL: agents taken by two runners'
 * loops (AgentRepo.takeOwnership writes the runner beside the owner epoch), one runner registered
 * through @effect/cluster's own runner storage (its `cluster_runners` table), the other gone; the
 * command (in process, the config file naming the database) prints each runner's agents and the
 * oldest verified quote, as text and as --json. No runner process is started: the command reads
 * the database only. About 1 s. PostgreSQL is mandatory in CI (CI=true) and skipped loudly elsewhere.
 */
import { describe, expect, it } from "@effect/vitest"
import { Runner, RunnerAddress, RunnerStorage, ShardingConfig, SqlRunnerStorage } from "@effect/cluster"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { SqlLive } from "../../src/db/Sql.js"
import { runAttest } from "../support/cli.js"
import { testDatabase } from "../support/db.js"
import { pgAvailable, validBody, verifierLayer } from "./support.js"

const LIVE = "127.0.0.1:40001"
const GONE = "127.0.0.1:40009"

describe.skipIf(!pgAvailable)("attest verifier cluster status on PostgreSQL", () => {
  it.live("prints each runner (registered or gone) with the active pull agents its loops took and the oldest verified quote", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase("pg")
      yield* Effect.gen(function*() {
        const agents = yield* Agents
        for (const id of ["c1", "c2", "c3", "c4"]) yield* agents.add(id, validBody())
        const repo = yield* AgentRepo
        for (const [id, runner] of [["c1", LIVE], ["c2", LIVE], ["c3", GONE]] as const) yield* repo.takeOwnership(id, "default", runner)
        // c4: no loop took it yet. The status shows whose loop took each agent
        const ownerOf = (id: string) => Effect.map(agents.show(id, { major: 2, minor: 6 }), (s) => (s as Record<string, unknown>)["owner_runner"])
        expect([yield* ownerOf("c1"), yield* ownerOf("c3"), yield* ownerOf("c4")]).toEqual([LIVE, GONE, null])
      }).pipe(Effect.provide(verifierLayer(db)))
      // the engine registers the live runner in its own table
      yield* Effect.gen(function*() {
        const storage = yield* RunnerStorage.RunnerStorage
        yield* storage.register(Runner.make({ address: RunnerAddress.make("127.0.0.1", 40001), groups: ["default"], weight: 1 }), true)
      }).pipe(Effect.provide(SqlRunnerStorage.layer.pipe(Layer.provide([SqlLive(db, "verifier"), ShardingConfig.layer()]))))

      const dir = mkdtempSync(join(tmpdir(), "attest-cluster-status-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const config = join(dir, "attest.toml")
      writeFileSync(config, `[verifier]\ndatabase_url = "${db.database_url}"\ncluster = true\n`)

      const json = yield* runAttest("verifier", "cluster", "status", "--config", config, "--json")
      expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: "" })
      const s = JSON.parse(json.stdout) as { runners: Array<Record<string, unknown>>; agents: number; agents_without_runner: number; oldest_verified_quote_seconds: number }
      expect(s.runners.map((r) => [r["address"], r["state"], r["agents"]])).toEqual([[LIVE, "healthy", 2], [GONE, "gone", 1]])
      expect({ agents: s.agents, without: s.agents_without_runner }).toEqual({ agents: 4, without: 1 })
      // never verified: counted from creation, a few seconds ago at most on a loaded machine
      expect(s.oldest_verified_quote_seconds).toBeGreaterThanOrEqual(0)
      expect(s.oldest_verified_quote_seconds).toBeLessThan(120)

      const text = yield* runAttest("verifier", "cluster", "status", "--config", config)
      expect(text.code).toEqual(0)
      const lines = text.stdout.split("\n")
      expect(lines[0]).toMatch(/^runner\s+state\s+heartbeat\s+agents\s+oldest verified quote$/)
      expect(lines[1]).toMatch(new RegExp(`^${LIVE}\\s+healthy\\s+\\d+ s ago\\s+2\\s+\\d+ s$`))
      expect(lines[2]).toMatch(new RegExp(`^${GONE}\\s+gone\\s+-\\s+1\\s+\\d+ s$`))
      expect(lines.slice(3, 4)).toEqual(["agents: 4 active pull agents, 1 not taken by a runner yet"])
    }).pipe(Effect.scoped), 60_000)
})
