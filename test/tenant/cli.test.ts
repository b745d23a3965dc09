/**
 * The `attest tenant` executable as a user runs it (spawned, from source): a registrar and the
 * verifier's API over HTTPS in this process, the tenant configured by a TOML file's [tenant]
 * section, and an agent on the TPM simulator that registered itself. Exit 0 with a table or --json, 1 with one line naming the server and the reason (no
 * stack trace), 2 for usage errors. Generous bounds: spawned processes are slow on a loaded machine.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { spawnAttest } from "../support/spawnAttest.js"
import { justAddedListEntry } from "./support.js"
import { closeClients, RunningAgent, simulatedAgentLayer } from "../agent/support.js"
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
  const verifier = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), poller: recordingPoller(new Set([AGENT])).layer })
  const ekCaDir = join(root, "tpm_cert_store")
  mkdirSync(ekCaDir)
  writeFileSync(join(ekCaDir, "simulator-ca.pem"), simulatorManufacturerCa().pem)
  const file = join(root, "attest.toml")
  const port = (url: string) => Number(new URL(url).port)
  writeFileSync(
    file,
    `[tenant]\ntls_dir = "${pki.dir}"\nca_dir = "${pki.dir}"\nek_ca_dir = "${ekCaDir}"\nregistrar_port = ${port(reg.httpsUrl)}\nverifier_port = ${port(verifier.url)}\nrequest_timeout = 60\n`
  )
  yield* Effect.addFinalizer(() => Effect.sync(closeClients))
  // an agent on the TPM simulator that registers and activates itself with the registrar
  const agent = simulatedAgentLayer(
    { agentId: AGENT, dataDir: join(root, "agent"), trustedClientCa: pki.caPem, registrarUrl: reg.httpUrl, retry: { initialDelay: "100 millis", maxDelay: "1 second" } },
    { name: "cli-machine" },
    { seed: "tenant-cli" }
  )
  return Layer.merge(agent, Layer.succeed(Config, { file }))
}))

const AGENT = "1a2b3c4d-0000-4000-8000-00000000c1c1"

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
    it.scoped("exit 0: reglist, add --json, status, list --json and delete against running servers and a registered agent", () =>
      Effect.gen(function*() {
        const { file } = yield* Config
        const agent = yield* RunningAgent
        const reglist = yield* run("reglist", "--config", file)
        expect({ code: reglist.code, err: reglist.err }).toEqual({ code: 0, err: "" })
        expect(reglist.out.trim().split("\n")).toEqual([
          "agent                                 active  address          registrations",
          `${AGENT}  yes     127.0.0.1:${agent.port}  1`
        ])
        const policies = yield* run("runtime-policy", "list", "--config", file, "--json")
        expect(JSON.parse(policies.out)).toEqual({ names: [] })

        const added = yield* run("add", "--uuid", AGENT, "--config", file, "--json")
        expect(added.code).toEqual(0)
        expect(JSON.parse(added.out)).toMatchObject({ agent_id: AGENT, added: true, agent_api_version: "2.6" })
        expect(added.err).toContain(`agent ${AGENT}: identity quote verified with the registered AK`)
        const status = yield* run("status", "--uuid", AGENT, "--config", file)
        expect(status.code).toEqual(0)
        expect(status.out).toMatch(/^state: +Start \(1\)$/m)
        const listed = yield* run("list", "--json", "--config", file)
        expect(JSON.parse(listed.out)).toEqual([justAddedListEntry(AGENT)])
        const deleted = yield* run("delete", "--uuid", AGENT, "--config", file)
        expect({ code: deleted.code, out: deleted.out.trim() }).toEqual({ code: 0, out: `agent ${AGENT} deleted at the verifier` })
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
