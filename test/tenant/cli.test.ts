/**
 * The `attest tenant` executable as a user runs it (spawned, from source): a registrar and the
 * verifier's API over HTTPS in this process, the tenant configured by a TOML file's [tenant]
 * section. Exit 0 with a table or --json, 1 with one line naming the server and the reason (no
 * stack trace), 2 for usage errors. Generous bounds: spawned processes are slow on a loaded machine.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa } from "../../layers/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { spawnAttest } from "../support/spawnAttest.js"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { startVerifier } from "../verifier/apiHarness.js"
import { recordingPoller } from "../verifier/support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const root = mkdtempSync(join(tmpdir(), "attest-tenant-cli-"))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")

class Config extends Context.Tag("test/tenant/Config")<Config, { readonly file: string }>() {}

const servers = Layer.unwrapScoped(Effect.gen(function*() {
  const reg = Context.get(yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(join(root, "registrar.sqlite")))), TestRegistrar)
  const verifier = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), poller: recordingPoller().layer })
  const file = join(root, "attest.toml")
  const port = (url: string) => Number(new URL(url).port)
  writeFileSync(
    file,
    `[tenant]\ntls_dir = "${pki.dir}"\nca_dir = "${pki.dir}"\nregistrar_port = ${port(reg.httpsUrl)}\nverifier_port = ${port(verifier.url)}\nrequest_timeout = 60\n`
  )
  return Layer.succeed(Config, { file })
}))

const run = (...args: Array<string>) => Effect.promise(() => spawnAttest("tenant", ...args))

/** One line on stderr, no stack frames. */
const oneLine = (err: string) => {
  const lines = err.trim().split("\n")
  expect(lines.length).toEqual(1)
  expect(err).not.toMatch(/\n\s+at /)
  return lines[0]
}

describe("attest tenant (spawned)", () => {
  layer(Layer.orDie(servers), { timeout: 600_000, excludeTestServices: true })((it) => {
    it.effect("exit 0: reglist, list --json and runtime-policy list against running servers", () =>
      Effect.gen(function*() {
        const { file } = yield* Config
        const reglist = yield* run("reglist", "--config", file)
        expect({ code: reglist.code, out: reglist.out.trim(), err: reglist.err }).toEqual({ code: 0, out: "no agents registered", err: "" })
        const listed = yield* run("list", "--json", "--config", file)
        expect(listed.code).toEqual(0)
        expect(JSON.parse(listed.out)).toEqual([])
        const policies = yield* run("runtime-policy", "list", "--config", file, "--json")
        expect(JSON.parse(policies.out)).toEqual({ names: [] })
      }), { timeout: 240_000 })

    it.effect("exit 1 with one line: unknown agent, verifier down, agent not registered", () =>
      Effect.gen(function*() {
        const { file } = yield* Config
        const unknown = yield* run("status", "--uuid", "no-such-agent", "--config", file)
        expect(unknown.code).toEqual(1)
        expect(oneLine(unknown.err)).toEqual("attest tenant status: status of agent no-such-agent: the verifier answered 404: agent id not found")
        const down = yield* run("status", "--uuid", "a1", "--config", file, "--verifier", "https://127.0.0.1:1")
        expect(down.code).toEqual(1)
        expect(oneLine(down.err)).toEqual(
          "attest tenant status: GET https://127.0.0.1:1/version: cannot reach the verifier at https://127.0.0.1:1: connection refused (is it running?)"
        )
        const notRegistered = yield* run("add", "--uuid", "a1", "--config", file)
        expect(notRegistered.code).toEqual(1)
        expect(oneLine(notRegistered.err)).toEqual(
          "attest tenant add: registrar record of agent a1: the registrar answered 404: Agent with ID 'a1' not found"
        )
      }), { timeout: 240_000 })

    it.effect("exit 2: a missing option, a bad agent id, contradictory options", () =>
      Effect.gen(function*() {
        const { file } = yield* Config
        const missing = yield* run("status", "--config", file)
        expect(missing.code).toEqual(2)
        const badId = yield* run("status", "--uuid", "no/such", "--config", file)
        expect(badId.code).toEqual(2)
        expect(oneLine(badId.err)).toEqual("attest tenant status: --uuid no/such: an agent id is 1-255 letters, digits, '-', '_' or '.'")
        const both = yield* run("add", "--uuid", "a1", "--payload", file, "--cert", root, "--config", file)
        expect(both.code).toEqual(2)
        expect(oneLine(both.err)).toEqual("attest tenant add: give --payload or --cert, not both (a certificate package is the payload)")
      }), { timeout: 240_000 })
  })
})
