/**
 * `attest tenant` against real servers over HTTPS with real certificates, composed in-process: the
 * registrar, the verifier's API (no poller, one that owns the agent for deletes: a stand-in delivers V to the agent as the poller's
 * PROVIDE_V step would, POST keys/vkey with the verifier's stored V wrapped for the agent's NK) and
 * an attest agent on the TPM simulator that registered and activated itself. `add` with a
 * certificate package, --include autorun.sh, a named runtime policy and --verify; status, list,
 * bulkinfo, stop, reactivate, the policy commands, delete; `update` whose V does not match leaves
 * the agent with an old K, so keys/verify answers a wrong HMAC and the agent is stopped; and the
 * errors a user meets.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Either, Fiber, Layer, Option, Ref, Schedule } from "effect"
import * as crypto from "node:crypto"
import * as https from "node:https"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa } from "../../src/tpm/simulator/TpmSimulator.js"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Tpm } from "../../src/tpm/Tpm.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { add, type AddOptions, addPush, update } from "../../src/tenant/add.js"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { simulatedAgent, testPushAgentOptions } from "../push/support.js"
import { NodeHttpClient } from "@effect/platform-node"
import { bulkinfo, list, reactivate, remove, status, stop } from "../../src/tenant/agentCommands.js"
import type { Connections } from "../../src/tenant/connect.js"
import { policyDelete, policyList, policyShow, policyUpload } from "../../src/tenant/policyCommands.js"
import { testDatabase } from "../support/db.js"
import { vectorPath } from "../support/vectors.js"
import { closeClients, RunningAgent, simulatedAgentLayer } from "../agent/support.js"
import { agentBody, call, makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { startVerifier } from "../verifier/apiHarness.js"
import { recordingPoller } from "../verifier/support.js"
import { captureOutput, deliverVTo, justAddedListEntry, tenantConnections } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const root = mkdtempSync(join(tmpdir(), "attest-tenant-enrol-"))
const ekCaDir = join(root, "tpm_cert_store")
mkdirSync(ekCaDir)
writeFileSync(join(ekCaDir, "simulator-ca.pem"), simulatorManufacturerCa().pem)
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const policyFile = vectorPath("keylime", "test", "data", "create-runtime-policy", "policy-sha256")
const refstateFile = vectorPath("keylime", "keylime", "mba", "elchecking", "example_reference_state.json")

const AGENT = "1a2b3c4d-0000-4000-8000-00000000e001"
/** An agent that speaks only API 2.1 and 2.2. */
const OLD = "1a2b3c4d-0000-4000-8000-00000000e002"

const addOptions = (o: Partial<AddOptions> = {}): AddOptions => ({
  agentId: AGENT,
  ip: Option.none(),
  port: Option.none(),
  runtimePolicy: Option.none(),
  runtimePolicyName: Option.none(),
  mbRefstate: Option.none(),
  mbPolicyName: Option.none(),
  tpmPolicy: Option.none(),
  payload: Option.none(),
  cert: Option.none(),
  include: [],
  revocationKey: Option.none(),
  verify: false,
  ...o
})

class World extends Context.Tag("test/tenant/World")<World, {
  readonly c: Connections
  readonly agentDir: string
  readonly verifierUrl: string
  readonly registrarHttp: string
  readonly registrarDb: string
}>() {}

/** Registrar, verifier and one registered agent; the tenant's connections to them. */
const world = Layer.unwrapScoped(Effect.gen(function*() {
  const registrarDb = join(mkdtempSync(join(root, "reg-")), "registrar.sqlite")
  const registrarLayer = testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(registrarDb))
  const reg = Context.get(yield* Layer.build(registrarLayer), TestRegistrar)
  const verifier = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), poller: recordingPoller(new Set([AGENT, OLD])).layer })
  const agentDir = join(root, "agent")
  const agent = simulatedAgentLayer(
    {
      agentId: AGENT,
      dataDir: agentDir,
      trustedClientCa: pki.caPem,
      registrarUrl: reg.httpUrl,
      payload: { dir: join(agentDir, "secure"), extractZip: true, script: "autorun.sh" },
      retry: { initialDelay: "100 millis", maxDelay: "1 second" }
    },
    { name: "tenant-machine" },
    { seed: "tenant-enrol" }
  )
  const c = yield* tenantConnections({ caDir: pki.dir, registrar: reg.httpsUrl, verifier: verifier.url, ekCaDir, options: { retry_interval: 1, verify_timeout: 10 } })
  yield* Effect.addFinalizer(() => Effect.sync(closeClients))
  return Layer.merge(agent, Layer.succeed(World, { c, agentDir, verifierUrl: verifier.url, registrarHttp: reg.httpUrl, registrarDb }))
}))

/** V to the agent as the poller will deliver it (support.ts deliverVTo). */
const deliverV = (wrongV?: Uint8Array) =>
  Effect.gen(function*() {
    const { c } = yield* World
    const agent = yield* RunningAgent
    yield* deliverVTo(c, agent, { cert: pki.clients.admin.cert!, key: pki.clients.admin.key! }, AGENT, wrongV)
  })

describe("attest tenant against a registrar, a verifier and an agent", () => {
  layer(Layer.orDie(world), { timeout: 300_000, excludeTestServices: true })((it) => {
    it.scoped("add with a certificate package, a named runtime policy and --verify; then status, list, stop, reactivate, policies, delete", () =>
      Effect.gen(function*() {
        const { agentDir, c } = yield* World
        const o = captureOutput()
        const include = join(root, "include")
        mkdirSync(include, { recursive: true })
        writeFileSync(join(include, "autorun.sh"), "#!/bin/sh\necho delivered > autorun.out\n")
        chmodSync(join(include, "autorun.sh"), 0o755)
        const caDir = join(root, "package-ca")
        const { initCa } = yield* Effect.promise(() => import("../../src/pki/ca.js"))
        yield* Effect.orDie(initCa({ dir: caDir }))

        const provider = yield* Effect.fork(deliverV())
        yield* add(c, o.out, addOptions({
          cert: Option.some(caDir),
          include: [include],
          runtimePolicy: Option.some(policyFile),
          runtimePolicyName: Option.some("rt-enrol"),
          verify: true
        }))
        yield* Fiber.join(provider)
        const added = o.last().value as Record<string, unknown>
        expect(added).toMatchObject({ agent_id: AGENT, added: true, verified: true, agent_api_version: "2.6", verifier_api_version: "2.6", registrar_api_version: "2.6", tpm_policy: "{\"mask\": \"0x400\"}" })
        expect(added["package"]).toContain("RevocationNotifier-cert.crt")
        expect(o.notes.join("\n")).toContain(`agent ${AGENT}: identity quote verified with the registered AK; PCR 16 binds its NK (API 2.6)`)
        // the package arrived decrypted, unpacked, and its autorun.sh ran
        const unzipped = join(agentDir, "secure", "unzipped")
        expect(readFileSync(join(unzipped, "autorun.out"), "utf8")).toEqual("delivered\n")
        expect(existsSync(join(unzipped, `${AGENT}-cert.crt`))).toEqual(true)
        expect(readFileSync(join(unzipped, "RevocationNotifier-cert.crt"), "utf8")).toEqual(readFileSync(join(caDir, "RevocationNotifier-cert.crt"), "utf8"))

        yield* status(c, o.out, AGENT)
        const shown = o.last().value as Record<string, unknown>
        expect(shown).toMatchObject({ agent_id: AGENT, operational_state: 1, state_name: "Start", has_runtime_policy: 1, attestation_count: 0 })
        expect(JSON.parse(shown["meta_data"] as string)).toMatchObject({ subject: `CN=${AGENT},O=attest` })
        expect(o.last().text).toMatch(/^state: +Start \(1\)$/m)
        expect(o.last().text).toMatch(/^last success: +never$/m)

        yield* list(c, o.out, undefined)
        expect(o.last().value).toEqual([justAddedListEntry(AGENT)])
        expect(o.last().text.split("\n")[0]).toEqual("agent                                 verifier state  verdict  attestations  last success  last failure  registrar")
        yield* list(c, o.out, { state: 9 })
        expect(o.last().text).toEqual("no agents in state Invalid Quote (9)")
        yield* bulkinfo(c, o.out)
        expect(Object.keys(o.last().value as object)).toEqual([AGENT])

        yield* stop(c, o.out, AGENT)
        yield* status(c, o.out, AGENT)
        expect((o.last().value as { operational_state: number }).operational_state).toEqual(10)
        yield* reactivate(c, o.out, AGENT)
        expect(o.last().text).toEqual(`agent ${AGENT} reactivated at the verifier`)

        yield* policyList(c, o.out, "runtime")
        expect(o.last().value).toEqual({ names: ["rt-enrol"] })
        yield* policyShow(c, o.out, "runtime", "rt-enrol")
        expect(JSON.parse(o.last().text)).toEqual(JSON.parse(readFileSync(policyFile, "utf8")))
        yield* policyUpload(c, o.out, "runtime", { name: "rt-second", file: policyFile }, false)
        yield* policyUpload(c, o.out, "runtime", { name: "rt-second", file: policyFile }, true)
        expect(o.last().text).toEqual("runtime policy rt-second updated at the verifier")
        yield* policyDelete(c, o.out, "runtime", "rt-second")
        const inUse = yield* Effect.either(policyDelete(c, o.out, "runtime", "rt-enrol"))
        expect(Either.isLeft(inUse) && inUse.left.message).toMatch(/^delete runtime policy rt-enrol: the verifier answered 409: /)

        // a DSSE-signed policy with the key that verifies it; the bad signature is refused with the verifier's reason
        const data = (f: string) => vectorPath("keylime", "test", "data", f)
        yield* policyUpload(c, o.out, "runtime", { name: "rt-signed", file: data("runtime-policy-test-signed.json"), key: data("runtime-policy-pubkey.pub") }, false)
        expect(o.last().text).toEqual("runtime policy rt-signed added at the verifier")
        const badSig = yield* Effect.either(policyUpload(c, o.out, "runtime", { name: "rt-bad", file: data("runtime-policy-test-signed-bad.json"), key: data("runtime-policy-pubkey.pub") }, false))
        expect(Either.isLeft(badSig) && badSig.left.message).toMatch(/^add runtime policy rt-bad: the verifier answered 401: /)
        yield* policyDelete(c, o.out, "runtime", "rt-signed")

        yield* policyUpload(c, o.out, "mb", { name: "mb-example", file: refstateFile }, false)
        yield* policyList(c, o.out, "mb")
        expect((o.last().value as { names: Array<string> }).names).toContain("mb-example")
        yield* policyShow(c, o.out, "mb", "mb-example")
        expect(JSON.parse(o.last().text)).toEqual(JSON.parse(readFileSync(refstateFile, "utf8")))
        yield* policyDelete(c, o.out, "mb", "mb-example")

        const unknownPolicy = yield* Effect.either(update(c, o.out, addOptions({ runtimePolicyName: Option.some("no-such-policy") })))
        expect(Either.isLeft(unknownPolicy) && unknownPolicy.left.message).toMatch(/^add agent .*: the verifier answered 404: .*no-such-policy/)

        yield* remove(c, o.out, AGENT).pipe(Effect.catchIf((e) => e.status === 404, () => Effect.void))
        const gone = yield* Effect.either(status(c, o.out, AGENT))
        expect(Either.isLeft(gone) && gone.left.message).toEqual(`status of agent ${AGENT}: the verifier answered 404: agent id not found`)
      }))

    it.scoped("update with a V that is not the tenant's: keys/verify answers a wrong HMAC and the agent is stopped", () =>
      Effect.gen(function*() {
        const { c } = yield* World
        const o = captureOutput()
        const first = yield* Effect.fork(deliverV())
        yield* add(c, o.out, addOptions({ verify: true }))
        yield* Fiber.join(first)
        // the verifier's V is replaced: the agent cannot combine the new U with it and keeps its old K
        const wrong = yield* Effect.fork(Effect.delay(deliverV(new Uint8Array(crypto.randomBytes(32))), "1 second"))
        const refused = yield* Effect.either(update(c, o.out, addOptions({ verify: true })))
        yield* Fiber.join(wrong)
        expect(Either.isLeft(refused) && refused.left.message).toEqual(
          `agent ${AGENT}: keys/verify answered an HMAC that does not match K (the V it holds is not the tenant's); the agent has been stopped at the verifier`
        )
        yield* status(c, o.out, AGENT)
        expect((o.last().value as { operational_state: number }).operational_state).toEqual(10)
        yield* remove(c, o.out, AGENT)
      }))

    it.scoped("an agent that speaks only API 2.1-2.2 is enrolled in 2.2; an AK other than the registered one and an agent never activated are refused", () =>
      Effect.gen(function*() {
        const { c, registrarDb, registrarHttp } = yield* World
        const o = captureOutput()
        const old = yield* Layer.build(simulatedAgentLayer(
          {
            agentId: OLD,
            dataDir: join(root, "old-agent"),
            trustedClientCa: pki.caPem,
            registrarUrl: registrarHttp,
            versions: ["2.1", "2.2"],
            retry: { initialDelay: "100 millis", maxDelay: "1 second" }
          },
          { name: "old-machine" },
          { seed: "tenant-old-agent" }
        ))
        yield* add(c, o.out, addOptions({ agentId: OLD }))
        expect(o.last().value).toMatchObject({ agent_id: OLD, added: true, agent_api_version: "2.2" })

        // the registrar's record names another AK than the one the agent quotes with
        const tpm = Context.get(old, Tpm)
        const otherAk = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
        const sql = Context.get(yield* Layer.build(SqliteClient.layer({ filename: registrarDb })), SqlClient.SqlClient)
        yield* sql`UPDATE registrar_agents SET aik_tpm = ${Buffer.from(otherAk.public).toString("base64")} WHERE agent_id = ${OLD}`
        const wrongAk = yield* Effect.either(update(c, o.out, addOptions({ agentId: OLD })))
        expect(Either.isLeft(wrongAk) && wrongAk.left.message).toMatch(
          new RegExp(`^agent ${OLD}: identity quote refused: .*signature.*\\(is the agent using the AK it registered\\?\\)$`)
        )

        const PENDING = "1a2b3c4d-0000-4000-8000-00000000e003"
        const body = yield* agentBody(tpm)
        const posted = yield* call(pki, { httpUrl: registrarHttp, httpsUrl: "" }, { method: "POST", path: `/v2.6/agents/${PENDING}`, port: "http", json: body.body })
        expect(posted.status).toEqual(200)
        const inactive = yield* Effect.either(add(c, o.out, addOptions({ agentId: PENDING })))
        expect(Either.isLeft(inactive) && inactive.left.message).toEqual(
          `registrar record of agent ${PENDING}: the registrar answered 404: Agent with ID '${PENDING}' has not been activated`
        )
      }))

    it.scoped("update checks every input before it deletes: a bad --cert leaves the agent enrolled; a Keylime CA directory says what to pass", () =>
      Effect.gen(function*() {
        const { c } = yield* World
        const o = captureOutput()
        yield* add(c, o.out, addOptions())
        // Keylime's CA directory: its key is in private.yml, encrypted with the CA password
        const keylimeCa = join(root, "keylime-ca")
        mkdirSync(keylimeCa, { recursive: true })
        writeFileSync(join(keylimeCa, "cacert.crt"), pki.caPem)
        writeFileSync(join(keylimeCa, "private.yml"), "salt: c2FsdA==\npriv: ZW5jcnlwdGVk\n")
        const refused = yield* Effect.either(update(c, o.out, addOptions({ cert: Option.some(keylimeCa) })))
        expect(Either.isLeft(refused) && refused.left.message).toEqual(
          `--cert ${keylimeCa}: a Keylime CA directory: its CA key is in private.yml, encrypted with the CA password, which attest does not read. ` +
            `Write the key beside cacert.crt as ca-private.pem (PEM, not encrypted), in that directory: ` +
            `python3 -c "from keylime import ca_util; import getpass; ca_util.setpassword(getpass.getpass()); open('ca-private.pem', 'wb').write(ca_util.read_private()[0]['ca'])" ` +
            `(then chmod 600 ca-private.pem), and give --cert ${keylimeCa} again; or give attest's own CA directory (attest ca init --dir <dir>)`
        )
        const missing = yield* Effect.either(update(c, o.out, addOptions({ cert: Option.some(join(root, "no-such-ca")) })))
        expect(Either.isLeft(missing)).toBe(true)
        // still enrolled, as before the update
        yield* status(c, o.out, AGENT)
        expect((o.last().value as { agent_id: string }).agent_id).toEqual(AGENT)
        yield* remove(c, o.out, AGENT)
      }))

    it.scoped("add --push: a push agent that registered itself is enrolled without contacting it, attests, and its status says so", () =>
      Effect.gen(function*() {
        const { c, registrarHttp, verifierUrl } = yield* World
        const o = captureOutput()
        const PUSH = "1a2b3c4d-0000-4000-8000-00000000e004"
        const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
        yield* Effect.forkScoped(runPushAgent({
          ...testPushAgentOptions({ agentId: PUSH, dataDir: join(root, "push-agent"), verifierUrl, verifierCa: pki.caPem }),
          registrarUrl: registrarHttp,
          registrarRetry: { initialDelay: "50 millis", maxDelay: "200 millis" }
        }, stats).pipe(Effect.provide(Layer.merge(simulatedAgent("tenant-push"), NodeHttpClient.layerUndici))))
        const refused = yield* Effect.either(addPush(c, o.out, addOptions({ agentId: PUSH, payload: Option.some(policyFile) })))
        expect(Either.isLeft(refused) && refused.left.message).toEqual(
          "--push: leave out --payload: a push agent gets no payload (it listens on no port; the tenant never sends it U)"
        )
        yield* addPush(c, o.out, addOptions({ agentId: PUSH, mbRefstate: Option.none() }), { waitForRegistration: Duration.seconds(120) })
        expect(o.last().value).toMatchObject({ agent_id: PUSH, added: true, attestation_model: "push" })
        yield* Effect.repeat(Ref.get(stats), { until: (s) => s.accepted >= 1, schedule: Schedule.spaced("200 millis") }).pipe(Effect.timeout("120 seconds"))
        yield* status(c, o.out, PUSH).pipe(
          Effect.andThen(() => (o.last().value as { attestation_status: string }).attestation_status),
          Effect.repeat({ until: (s) => s === "PASS", schedule: Schedule.spaced("200 millis") }),
          Effect.timeout("60 seconds")
        )
        const shown = o.last()
        expect(shown.text.split("\n").filter((l) => /^(model|state|address):/.test(l))).toEqual([
          "model:            push (sends its evidence, API 3.0)",
          "state:            PASS"
        ])
        yield* remove(c, o.out, PUSH)
      }))

    it.scoped("a verifier that answers /version with 410 Gone (Keylime's in push mode) is spoken to in the tenant's current version", () =>
      Effect.gen(function*() {
        const { c, verifierUrl } = yield* World
        const o = captureOutput()
        // in front of the verifier: /version answers 410, everything else goes through to it
        const target = new URL(verifierUrl)
        const front = https.createServer({ key: pki.serverKey, cert: pki.serverCert, ca: pki.caPem, requestCert: true }, (req, res) => {
          if (req.url === "/version") {
            res.writeHead(410, { "content-type": "text/plain" }).end("Gone")
            return
          }
          const forward = https.request({
            host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers,
            ca: pki.caPem, cert: pki.clients.admin.cert, key: pki.clients.admin.key, servername: "localhost"
          }, (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(res)
          })
          req.pipe(forward)
        })
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => void front.listen(0, "127.0.0.1", () => resume(Effect.void))),
          () => Effect.sync(() => front.close())
        )
        const gone = yield* tenantConnections({ caDir: pki.dir, registrar: c.settings.registrarUrl, verifier: `https://127.0.0.1:${(front.address() as { port: number }).port}`, ekCaDir })
        const unknown = "1a2b3c4d-0000-4000-8000-00000000e0ff"
        const answer = yield* Effect.either(status(gone, o.out, unknown))
        expect([(yield* gone.verifier).version, Either.isLeft(answer) && answer.left.message]).toEqual([
          "2.6",
          `status of agent ${unknown}: the verifier answered 404: agent id not found`
        ])
      }))

    it.scoped("errors a user meets: agent not registered, EK certificate from an untrusted CA, verifier down", () =>
      Effect.gen(function*() {
        const { c } = yield* World
        const o = captureOutput()
        const missing = yield* Effect.either(add(c, o.out, addOptions({ agentId: "not-registered" })))
        expect(Either.isLeft(missing) && missing.left.message).toEqual(
          "registrar record of agent not-registered: the registrar answered 404: Agent with ID 'not-registered' not found"
        )

        const otherStore = join(root, "other-store")
        mkdirSync(otherStore, { recursive: true })
        writeFileSync(join(otherStore, "ca.pem"), pki.caPem)
        const r = yield* c.registrar
        const untrusted = yield* tenantConnections({ caDir: pki.dir, registrar: r.url, verifier: c.settings.verifierUrl, ekCaDir: otherStore })
        const refused = yield* Effect.either(add(untrusted, o.out, addOptions()))
        expect(Either.isLeft(refused) && refused.left.message).toMatch(
          new RegExp(`^agent ${AGENT}: EK certificate refused: certificate .* is issued by .*, which is not in the trust store ${otherStore}`)
        )

        const down = yield* tenantConnections({ caDir: pki.dir, registrar: r.url, verifier: "https://127.0.0.1:1", ekCaDir })
        const unreachable = yield* Effect.either(status(down, o.out, AGENT))
        expect(Either.isLeft(unreachable) && unreachable.left.message).toEqual(
          "GET https://127.0.0.1:1/version: cannot reach the verifier at https://127.0.0.1:1: connection refused (is it running?)"
        )
      }))
  })
})
