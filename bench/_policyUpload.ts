/**
 * A runtime policy uploaded through the verifier's API, for bench/policy-load.ts: `attest verifier`
 * (the bundle, its own process, SQLite or a fresh PostgreSQL schema) takes the same policy several
 * times through `POST /v2.6/allowlists/:name` and `POST /v3.0/policies/ima` (JSON:API) over HTTPS
 * with the generated admin certificate; the figure is the verifier's process CPU (/proc, all
 * threads) per upload, each under a new name (every upload is stored). BENCH_PROF_DIR=<dir> writes
 * the verifier's CPU profile there (read it with bench/_profileSummary.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { rawRequest } from "../src/http/client.js"
import { testDatabase } from "../test/support/db.js"
import { cpuMs } from "./_procCpu.js"
import { spawnVerifier } from "./_verifierProcess.js"

export interface UploadFigures {
  /** Verifier CPU seconds per upload, each round. */
  readonly v2: Array<number>
  readonly v3: Array<number>
}

/** Starts a verifier on `backend`, uploads `policyText` `rounds` times per route, stops it. */
export const measureUploads = (backend: "sqlite" | "pg", policyText: string, rounds: number) =>
  Effect.scoped(
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      const dir = mkdtempSync(join(tmpdir(), "attest-bench-upload-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const caDir = join(dir, "cv_ca")
      const config = join(dir, "attest.toml")
      writeFileSync(
        config,
        [
          "[verifier]",
          "port = 0",
          `tls_dir = "generate"`,
          `ca_dir = "${caDir}"`,
          `data_dir = "${db.data_dir === "" ? join(dir, "data") : db.data_dir}"`,
          `database_url = "${db.database_url}"`,
          "metrics_port = 0",
          `log_level = "warning"`,
          ""
        ].join("\n")
      )
      const prof = process.env["BENCH_PROF_DIR"]
      const { pid, tls, url } = yield* spawnVerifier(config, caDir, prof === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", prof])
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
      yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
      const b64 = Buffer.from(policyText).toString("base64")
      const v2Body = (name: string) => ({ path: `/v2.6/allowlists/${name}`, body: JSON.stringify({ runtime_policy: b64, tpm_policy: null }), type: "application/json" })
      const v3Body = (name: string) => ({
        path: "/v3.0/policies/ima",
        body: JSON.stringify({ data: { type: "ima_policy", id: name, attributes: { runtime_policy: b64 } } }),
        type: "application/vnd.api+json"
      })
      /** Verifier CPU (s) of one upload; the body is built before the reading starts. */
      const upload = (req: { path: string; body: string; type: string }) =>
        Effect.gen(function*() {
          const before = cpuMs(pid)
          const res = yield* rawRequest({ method: "POST", baseUrl: url, path: req.path, agent, tls, body: req.body, headers: { "content-type": req.type } }).pipe(Effect.orDie)
          // GC and background threads finish their share of the request before the reading
          yield* Effect.sleep("300 millis")
          if (res.status !== 201) return yield* Effect.dieMessage(`${req.path}: ${res.status} ${res.body.slice(0, 300)}`)
          return (cpuMs(pid) - before - idleMs(300)) / 1000
        })
      // The idle verifier's own CPU over the same pause, subtracted from each reading.
      const idleBefore = cpuMs(pid)
      yield* Effect.sleep("2 seconds")
      const idlePerMs = (cpuMs(pid) - idleBefore) / 2000
      const idleMs = (ms: number) => idlePerMs * ms
      // warm-up: one upload per route (JIT, TLS session)
      yield* upload(v2Body("warm2"))
      yield* upload(v3Body("warm3"))
      const v2: Array<number> = []
      const v3: Array<number> = []
      for (let i = 0; i < rounds; i++) {
        v2.push(yield* upload(v2Body(`p2-${i}`)))
        v3.push(yield* upload(v3Body(`p3-${i}`)))
      }
      return { v2, v3 } satisfies UploadFigures
    })
  )
