/**
 * `attest up --verifiers N` (issue 24): refused on SQLite, naming the setting (the check up runs
 * first; milliseconds); and two verifier runners in cluster mode on a fresh PostgreSQL
 * database (its own, dropped afterwards: the engine's shard locks are advisory locks, shared by
 * every schema of a database), the bundle as a child process, whose change lines name the runner
 * polling each agent once both agents pass. PostgreSQL is mandatory in CI (CI=true) and skipped
 * loudly elsewhere.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startAttest } from "../support/attestProcess.js"
import { checkVerifiers } from "../../src/cli/up/runners.js"
import { clusterDatabaseOptions } from "../support/clusterFleet.js"
import { needsPostgres } from "../support/requirements.js"

const pgAvailable = await needsPostgres()

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "attest-up-verifiers-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("attest up --verifiers", () => {
  // the check up runs first, before its data directory or any listener (the module alone: loading
  // up's implementation in process costs ~15 s on a loaded machine, and help.test.ts pays it already)
  it.effect("is refused on SQLite, naming --database-url", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(checkVerifiers({ verifiers: 2, databaseUrl: "" }))
      expect(refused.message).toEqual(
        "--verifiers 2 runs the verifier in cluster mode ([verifier] cluster = true), whose runners share one PostgreSQL database: " +
          "give --database-url postgres://…; SQLite (the default, or a sqlite: --database-url) is one process's database"
      )
      expect((yield* Effect.flip(checkVerifiers({ verifiers: 2, databaseUrl: "sqlite:/tmp/v.sqlite" })))._tag).toEqual("UsageError")
      expect((yield* Effect.flip(checkVerifiers({ verifiers: 0, databaseUrl: "" }))).message).toEqual("--verifiers 0: must be a number of verifier runners, 1 or more")
      expect(yield* checkVerifiers({ verifiers: 1, databaseUrl: "" })).toEqual(1)
      expect(yield* checkVerifiers({ verifiers: 3, databaseUrl: "postgres://u@h/db" })).toEqual(3)
    }))

  describe.skipIf(!pgAvailable)("on PostgreSQL", () => {
    it.live("starts two runners on one database; each agent passes, polled by one of them, and the change lines name it", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const databaseUrl = (yield* clusterDatabaseOptions).database_url // a database of its own: shard locks are per database
        const up = startAttest([
          "up", "--verifiers", "2", "--database-url", databaseUrl, "--agents", "2", "--data-dir", join(dir, "data"),
          "--registrar-port", "0", "--registrar-tls-port", "0", "--verifier-port", "0", "--agent-port", "0",
          "--metrics-port", "0", "--verifier-metrics-port", "0", "--dashboard-port", "-1", "--quote-interval", "1"
        ], { cwd: dir })
        yield* Effect.addFinalizer(() => Effect.promise(() => up.stop()))
        yield* Effect.promise(async () => {
          const runners = await Promise.all([1, 2].map((n) => up.waitFor(new RegExp(`^verifier ${n}  https://\\S+  \\(admin API, mTLS; cluster runner (\\S+)\\)$`), 120_000)))
          const addresses = runners.map((l) => /cluster runner (\S+)\)$/.exec(l.text)![1]!)
          expect(new Set(addresses).size).toBe(2)
          await up.waitFor(/^ready: 2 of 2 agents enrolled at the verifier/, 120_000)
          // each agent: a change line with a passing verdict and the runner that polls it
          for (const n of [1, 2]) {
            const line = await up.waitFor(new RegExp(`^agent ${n}  \\S+  Get Quote \\(3\\), verdict pass, \\d+ attestations, runner (\\S+)$`), 60_000)
            expect(addresses).toContain(/runner (\S+)$/.exec(line.text)![1])
          }
        })
      }).pipe(Effect.scoped), 240_000)
  })
})
