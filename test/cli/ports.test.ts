/**
 * A port that is already taken (issue 8, item 13): `attest registrar` and `attest up` say which
 * address is in use and exit non-zero, instead of an empty line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startAttest } from "../support/attestProcess.js"
import { freePort } from "../support/swtpm.js"

/** A listening socket on a free loopback port, closed when the test is done. */
const holdPort = () =>
  Effect.acquireRelease(
    Effect.async<net.Server>((resume) => {
      const server = net.createServer()
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  ).pipe(Effect.map((server) => (server.address() as net.AddressInfo).port))

describe("a port already in use", () => {
  it.live("attest registrar names the address and exits non-zero", () =>
    Effect.gen(function*() {
      const held = yield* holdPort()
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-ports-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const config = join(dir, "attest.toml")
      writeFileSync(config, [
        "[registrar]",
        `port = ${held}`,
        `tls_port = ${yield* Effect.promise(() => freePort())}`,
        `tls_dir = "generate"`,
        `ca_dir = "${join(dir, "cv_ca")}"`,
        `data_dir = "${join(dir, "data")}"`,
        `ek_ca_dir = "${join(dir, "tpm_cert_store")}"`,
        "metrics_port = 0",
        ""
      ].join("\n"))
      const run = startAttest(["registrar", "--config", config])
      const code = yield* Effect.promise(() => run.exited)
      expect(code).not.toBe(0)
      expect(run.output()).toContain(`attest registrar: registrar-http: cannot listen on 127.0.0.1:${held}: the address is already in use (EADDRINUSE)`)
    }).pipe(Effect.scoped), 120_000)

  it.live("attest up names the address and exits non-zero", () =>
    Effect.gen(function*() {
      const held = yield* holdPort()
      const dir = mkdtempSync(join(tmpdir(), "attest-cli-ports-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const run = startAttest([
        "up", "--data-dir", join(dir, ".attest"), "--agents", "1",
        "--registrar-port", String(yield* Effect.promise(() => freePort())), "--registrar-tls-port", String(held), "--agent-port", "0", "--metrics-port", "0"
      ])
      const code = yield* Effect.promise(() => run.exited)
      expect(code).not.toBe(0)
      expect(run.output()).toContain(`attest up: registrar-https: cannot listen on 127.0.0.1:${held}: the address is already in use (EADDRINUSE)`)
    }).pipe(Effect.scoped), 120_000)
})
