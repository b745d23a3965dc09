/**
 * SQLite on a full disk (a real tmpfs of 4 MiB, filled by a file beside the database): the pull
 * loop cannot store its verdicts, yet the agent is not failed for it; the admin API refuses a
 * write with a clear answer (503 with Retry-After, the verifier's text, never 500) and still
 * reads; once space returns attestation goes on, and the database passes SQLite's integrity check.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Option } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { DbLive } from "../../src/db/Sql.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { needsTmpfs } from "../support/requirements.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "../verifier/apiHarness.js"
import { agentBody, newClientLog, verifierWithPoller, waitFor } from "../verifier/pollerSupport.js"
import { validBody } from "../verifier/support.js"

const AGENT = "diskfull-d2f1-4a97-9ef7-75bd81c0c001"
const OTHER = "d432fbb3-d2f1-4a97-9ef7-75bd81c0d15c"
const ok = needsTmpfs()

/** A 4 MiB tmpfs, unmounted when the scope closes. */
const smallDisk = Effect.acquireRelease(
  Effect.map(tempDir("attest-diskfull-"), (dir) => {
    const mnt = join(dir, "disk")
    mkdirSync(mnt)
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt])
    return mnt
  }),
  (mnt) => Effect.sync(() => execFileSync("umount", ["-l", mnt]))
)

/** Fills the disk with one file until the kernel says it is full. */
const fill = (path: string) => {
  const chunk = Buffer.alloc(64 * 1024, 0x5a)
  try {
    for (;;) writeFileSync(path, chunk, { flag: "a" })
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe("ENOSPC")
  }
}
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

describe.skipIf(!ok)("SQLite on a full disk", () => {
  it.scopedLive("no agent is failed for it, writes are refused clearly, and everything resumes when space returns", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-diskfull-work-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      const pki = makeTestPki()
      yield* Effect.addFinalizer(() => Effect.sync(() => removePki(pki)))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const agent = Context.get(
        yield* Layer.build(simulatedAgentLayer({ agentId: AGENT, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem, revocationCert: ca.clientCert }, { name: "diskfull" }, { seed: "diskfull" })),
        RunningAgent
      )
      const disk = yield* smallDisk
      const db = { database_url: "", data_dir: disk }
      const ctx = yield* Layer.build(verifierWithPoller(db, ca, { quote_interval: 1, retry_interval: 1, exponential_backoff: false, max_retries: 3, request_timeout: 2 }, newClientLog()))
      const api = yield* startVerifier({ pki, db })
      const call = (method: string, path: string, json?: unknown) => vcall(pki, api, { method, path, ...(json === undefined ? {} : { json }) })
      const row = Effect.map(Context.get(ctx, AgentRepo).find(AGENT), Option.getOrThrow)
      yield* Context.get(ctx, Agents).add(AGENT, agentBody(agent))
      yield* waitFor("2 attestations", row, (r) => r.attestation_count >= 2)

      const filler = join(disk, "filler")
      fill(filler)
      yield* sleep(6_000) // several quote intervals, more than max_retries * retry_interval
      const whileFull = yield* row
      expect([whileFull.operational_state, whileFull.severity_level, whileFull.last_event_id]).toEqual([3, null, null])
      const refused = yield* call("POST", `/v2.6/agents/${OTHER}`, validBody())
      expect([refused.status, refused.headers["retry-after"] !== undefined, summary(refused).text]).toEqual([503, true, "The verifier database is unavailable at the moment; retry later"])
      expect((yield* call("GET", `/v2.6/agents/${AGENT}`)).status).toBe(200)

      rmSync(filler)
      const before = (yield* row).attestation_count
      const after = yield* waitFor("attestations once space returned", row, (r) => r.attestation_count >= before + 2)
      expect([after.operational_state, after.severity_level]).toEqual([3, null])
      expect((yield* call("POST", `/v2.6/agents/${OTHER}`, validBody())).status).toBe(200)

      const integrity = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ integrity_check: string }>`PRAGMA integrity_check`).pipe(Effect.provide(Context.omit(AgentRepo)(ctx)))
      expect(integrity).toEqual([{ integrity_check: "ok" }])
    }), 180_000)

  it.scoped("a verifier whose data directory is read-only does not start, and says which directory", () =>
    Effect.gen(function*() {
      const disk = yield* smallDisk
      execFileSync("mount", ["-o", "remount,ro", disk])
      const started = yield* Effect.exit(Layer.build(DbLive({ database_url: "", data_dir: disk }, "verifier")))
      const error = Exit.isFailure(started) ? Cause.failureOption(started.cause) : Option.none()
      expect(Option.map(error, (e) => [e._tag, e.message])).toEqual(Option.some([
        "DatabaseConfigError",
        `the data directory ${disk} is not writable (EROFS); verifier's SQLite database verifier.sqlite lives there (data_dir, or database_url)`
      ]))
    }), 60_000)
})
