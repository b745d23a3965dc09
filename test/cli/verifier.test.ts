/**
 * `attest verifier --config f` as a real child process: it generates its CA (tls_dir = generate),
 * says where it listens, answers an admin over HTTPS with the generated client certificate, keeps
 * what it stored across a restart (SQLite under data_dir), and stops on SIGINT. Bounds are generous:
 * the machine may be loaded.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rawRequest } from "../../src/http/client.js"
import { CA_FILES } from "../../src/pki/layout.js"
import { startAttest } from "../support/attestProcess.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/

describe("attest verifier", () => {
  it.live("starts from its config, serves admins over mTLS, keeps its data across a restart", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-verifier-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const caDir = join(dir, "cv_ca")
      const config = join(dir, "attest.toml")
      writeFileSync(config, [
        "[verifier]",
        "port = 0",
        `tls_dir = "generate"`,
        `ca_dir = "${caDir}"`,
        `data_dir = "${join(dir, "data")}"`,
        "metrics_port = 0",
        ""
      ].join("\n"))

      const start = () =>
        Effect.gen(function*() {
          const run = startAttest(["verifier", "--config", config])
          yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
          const line = yield* Effect.promise(() => run.waitFor(LISTENING, 120_000))
          return { run, url: LISTENING.exec(line.text)![1]! }
        })
      const admin = () => ({
        ca: readFileSync(join(caDir, CA_FILES.caCert), "utf8"),
        cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"),
        key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8")
      })
      const request = (url: string, method: string, path: string, json?: unknown) =>
        rawRequest({
          method,
          baseUrl: url,
          path,
          tls: admin(),
          ...(json === undefined ? {} : { body: JSON.stringify(json), headers: { "content-type": "application/json" } })
        }).pipe(Effect.orDie)

      const first = yield* start()
      expect(first.run.output()).toMatch(/attest verifier: pull mode, verifier_id default/)
      const list = yield* request(first.url, "GET", "/v2.6/agents/")
      expect({ status: list.status, body: JSON.parse(list.body) }).toEqual({ status: 200, body: { code: 200, status: "Success", results: { uuids: [] } } })
      const added = yield* request(first.url, "POST", "/v2.6/mbpolicies/kept", { mb_policy: "{}" })
      expect(added.status).toBe(201)
      const noCert = yield* rawRequest({ method: "GET", baseUrl: first.url, path: "/v2.6/agents/", tls: { ca: admin().ca } }).pipe(Effect.orDie)
      expect(noCert.status).toBe(403)
      expect(yield* Effect.promise(() => first.run.stop())).toBe(0)

      const second = yield* start()
      const kept = yield* request(second.url, "GET", "/v2.6/mbpolicies/")
      expect(JSON.parse(kept.body)).toEqual({ code: 200, status: "Success", results: { "mbpolicy names": ["kept"] } })
      expect(yield* Effect.promise(() => second.run.stop())).toBe(0)
    }).pipe(Effect.scoped), 300_000)

  it.live("a config that cannot be used names the option and exits 1", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-verifier-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const config = join(dir, "attest.toml")
      writeFileSync(config, [
        "[verifier]",
        "port = 0",
        `tls_dir = "generate"`,
        `ca_dir = "${join(dir, "cv_ca")}"`,
        `data_dir = "${join(dir, "data")}"`,
        "metrics_port = 0",
        `severity_policy = '[{"event_id": ".*", "severity_label": "nope"}]'`,
        ""
      ].join("\n"))
      const run = startAttest(["verifier", "--config", config])
      expect(yield* Effect.promise(() => run.exited)).toBe(1)
      expect(run.output()).toMatch(/attest verifier: \[verifier\] severity_policy/)
    }).pipe(Effect.scoped), 300_000)
})
