/**
 * `attest up --host` (issue 22 §8): only a loopback address unless `--expose-on-network` asks for
 * another, and then the dashboard still stays on loopback; the help says so. The refusal comes
 * before anything is created or bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { upHosts } from "../../src/cli/up/hosts.js"
import { runAttest } from "../support/cli.js"

const refusal = (host: string) =>
  `attest up: --host ${host} is not a loopback address: the registrar, the verifier, the agents and the metrics listeners would accept connections from the network ` +
  `(with simulated TPMs and a generated CA). Use 127.0.0.1, ::1 or localhost, or add --expose-on-network to do it anyway (the dashboard stays on 127.0.0.1)`

describe("attest up --host", () => {
  it.effect("refuses an address that is not loopback without --expose-on-network, creating and binding nothing", () =>
    Effect.gen(function*() {
      const parent = mkdtempSync(join(tmpdir(), "attest-up-host-"))
      const dataDir = join(parent, "data")
      const outcomes: Array<[string, boolean, string]> = []
      for (const host of ["0.0.0.0", "::", "192.0.2.7", "example.com"]) {
        const r = yield* runAttest("up", "--host", host, "--data-dir", dataDir, "--agents", "0", "--dashboard-port", "-1")
        outcomes.push([host, r.ok, r.stderr])
      }
      const created = existsSync(dataDir)
      rmSync(parent, { recursive: true, force: true })
      expect(outcomes).toEqual(["0.0.0.0", "::", "192.0.2.7", "example.com"].map((host) => [host, false, refusal(host)]))
      expect(created).toBe(false)
    }), 60_000)

  it("with --expose-on-network the servers take the address, this process reaches a wildcard through loopback, the dashboard stays on loopback", () => {
    expect([
      upHosts("0.0.0.0", true),
      upHosts("::", true),
      upHosts("192.0.2.7", true),
      upHosts("127.0.0.2", false),
      upHosts("::1", true)
    ]).toEqual([
      Either.right({ listen: "0.0.0.0", reach: "127.0.0.1", dashboard: "127.0.0.1", exposed: true }),
      Either.right({ listen: "::", reach: "::1", dashboard: "127.0.0.1", exposed: true }),
      Either.right({ listen: "192.0.2.7", reach: "192.0.2.7", dashboard: "127.0.0.1", exposed: true }),
      Either.right({ listen: "127.0.0.2", reach: "127.0.0.2", dashboard: "127.0.0.2", exposed: false }),
      Either.right({ listen: "::1", reach: "::1", dashboard: "::1", exposed: false })
    ])
  })

  it.effect("the help says --host is loopback only and what --expose-on-network exposes", () =>
    Effect.gen(function*() {
      const r = yield* runAttest("up", "--help")
      const help = r.stdout.replace(/\s+/g, " ")
      expect([
        help.includes("a loopback address (127.0.0.1, ::1, localhost); another only with --expose-on-network"),
        help.includes("allow a --host that is not loopback (e.g. 0.0.0.0): the registrar, the verifier, the agents and the metrics listeners then accept connections from the network; the dashboard stays on 127.0.0.1")
      ]).toEqual([true, true])
    }), 60_000)
})
