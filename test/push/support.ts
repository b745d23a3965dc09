/**
 * A push-model verifier over HTTPS with real certificates (tls_dir = generate in a fresh CA
 * directory) on a fresh SQLite file or PostgreSQL schema, and a push agent's parts: a simulated
 * TPM, a simulated machine (boot log, IMA list), its AK, a runtime policy made from the machine's
 * own IMA list. Requests go through rawRequest with the CA (and the admin certificate when asked).
 */
import { Context, Effect, Layer, Option } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import type * as https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { ServerTlsWithAdmins } from "../../src/http/Tls.js"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { MeasurementSource } from "../../src/agent/measurements/MeasurementSource.js"
import { establishTpmIdentity } from "../../src/agent/tpmIdentity.js"
import * as SimulatedMachine from "../../src/agent/measurements/SimulatedMachine.js"
import { sectionDefaults } from "../../src/config/load.js"
import type { VerifierOptions } from "../../src/config/sections.js"
import { verifierSection } from "../../src/config/sections.js"
import { type ClientTls, rawRequest } from "../../src/http/client.js"
import { JSON_API_MEDIA_TYPE } from "../../src/http/jsonapi.js"
import { CA_FILES } from "../../src/pki/ca.js"
import { capabilitiesOf, collectEvidence, popProof, type PushIdentity } from "../../src/push-agent/evidence.js"
import type { PushAgentOptions } from "../../src/push-agent/PushAgent.js"
import { Sessions } from "../../src/verifier/push/Sessions.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { VERIFIER_LISTENER, VerifierServerLive } from "../../src/verifier/Server.js"
import type { DatabaseOptions } from "../../src/db/Sql.js"
import { type TestBackend, testDatabase } from "../support/db.js"
import { validBody, verifierLayer } from "../verifier/support.js"

export const b64 = (b: Uint8Array | string) => Buffer.from(b).toString("base64")

export interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly json: any
}

export interface PushEnv {
  readonly url: string
  readonly ca: string
  readonly admin: ClientTls
  readonly request: (
    method: string,
    path: string,
    o?: {
      readonly body?: unknown
      readonly token?: string
      readonly admin?: boolean
      readonly contentType?: string
      readonly authorization?: string
      /** A kept-alive connection of the caller's own (e.g. bound to another local address). */
      readonly agent?: https.Agent
    }
  ) => Effect.Effect<Reply>
}
export class PushTestEnv extends Context.Tag("test/PushTestEnv")<PushTestEnv, PushEnv>() {}

/**
 * The verifier (both API families, src/verifier/Server.ts) over HTTPS, with the verifier's domain
 * services (Agents, repositories, SqlClient) beside it for the tests' own steps (enrolment, SQL).
 */
export const pushVerifier = (backend: TestBackend, config: Partial<VerifierOptions> = {}, server: { readonly maxBodyBytes?: number } = {}) =>
  Layer.unwrapScoped(Effect.map(testDatabase(backend), (db) => pushVerifierOn(db, config, server)))

/** The same on a database given (two of them on one database are two verifier processes sharing it). */
export const pushVerifierOn = (db: DatabaseOptions, config: Partial<VerifierOptions> = {}, server: { readonly maxBodyBytes?: number } = {}) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const work = yield* Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "attest-push-"))), (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })))
    const caDir = join(work, "cv_ca")
    const section = sectionDefaults(verifierSection, { ca_dir: caDir, port: 0 })
    const domain = verifierLayer(db, { quote_interval: 1, ...config })
    const env = Layer.effect(
      PushTestEnv,
      Effect.gen(function*() {
        const url = (yield* BoundListeners).get(VERIFIER_LISTENER)!.url
        const ca = readFileSync(join(caDir, CA_FILES.caCert), "utf8")
        const admin: ClientTls = { ca, cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"), key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8") }
        const request: PushEnv["request"] = (method, path, o = {}) =>
          rawRequest({
            method,
            baseUrl: url,
            path,
            tls: o.admin === true ? admin : { ca },
            ...(o.agent === undefined ? {} : { agent: o.agent }),
            headers: {
              ...(o.body === undefined ? {} : { "content-type": o.contentType ?? JSON_API_MEDIA_TYPE }),
              ...(o.token === undefined ? {} : { authorization: `Bearer ${o.token}` }),
              ...(o.authorization === undefined ? {} : { authorization: o.authorization })
            },
            ...(o.body === undefined ? {} : { body: typeof o.body === "string" ? o.body : JSON.stringify(o.body) })
          }).pipe(
            Effect.map((r) => ({ status: r.status, headers: r.headers, json: r.body === "" ? undefined : JSON.parse(r.body) })),
            Effect.orDie
          )
        return { url, ca, admin, request }
      })
    )
    return env.pipe(
      Layer.provideMerge(VerifierServerLive({ host: "127.0.0.1", port: 0, ...server })),
      Layer.provideMerge(domain),
      Layer.provideMerge(ServerTlsWithAdmins("verifier", section)),
      Layer.orDie
    )
  }))

/** A simulated push agent: TPM, machine, AK. */
export const simulatedAgent = (name: string) =>
  Layer.effect(
    SimAgent,
    Effect.gen(function*() {
      const tpm = yield* Tpm
      const source = yield* MeasurementSource
      const machine = yield* SimulatedMachine.SimulatedMachine
      const ak = yield* tpm.createAk("rsa", { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" })
      return { tpm, source, machine, id: { ak, banks: ["sha256"] } satisfies PushIdentity }
    })
  ).pipe(Layer.provideMerge(SimulatedMachine.layer({ name })), Layer.provideMerge(TpmSimulator.layer({})))

export interface SimAgentShape {
  readonly tpm: Context.Tag.Service<Tpm>
  readonly source: Context.Tag.Service<MeasurementSource>
  readonly machine: SimulatedMachine.SimulatedMachineShape
  readonly id: PushIdentity
}
export class SimAgent extends Context.Tag("test/SimAgent")<SimAgent, SimAgentShape>() {}

/** A runtime policy that allows exactly what the machine's IMA list holds now (ima-ng sha256 digests). */
export const policyOfMachine = (list: string): string => {
  const digests: Record<string, Array<string>> = {}
  for (const line of list.split("\n")) {
    const parts = line.split(" ")
    if (parts.length < 5) continue
    const digest = parts[3]!.replace(/^sha256:/, "")
    const path = parts.slice(4).join(" ")
    ;(digests[path] ??= []).push(digest)
  }
  return JSON.stringify({
    meta: { version: 1, generator: 2 },
    release: 0,
    digests,
    excludes: [],
    keyrings: {},
    ima: { ignored_keyrings: [], log_hash_alg: "sha1", dm_policy: null },
    "ima-buf": {},
    "verification-keys": ""
  })
}

/** Enrols the simulated agent as a push agent (admin's step) with a runtime policy of its current IMA list (and `extra` fields of the body). */
export const enrol = (agentId: string, extra: Readonly<Record<string, unknown>> = {}) =>
  Effect.gen(function*() {
    const sim = yield* SimAgent
    const agents = yield* Agents
    const list = Option.getOrThrow(yield* Effect.orDie(sim.source.imaList(0))).list
    yield* Effect.orDie(agents.add(agentId, {
      ...validBody(),
      ak_tpm: b64(sim.id.ak.public),
      runtime_policy: b64(policyOfMachine(list)),
      accept_tpm_hash_algs: ["sha256"],
      accept_tpm_signing_algs: ["rsassa"],
      attestation_model: "push",
      ...extra
    }))
  })

/** POST + PATCH /v3.0/sessions with the AK's proof: the bearer token. */
export const openSession = (agentId: string) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const sim = yield* SimAgent
    const created = yield* env.request("POST", "/v3.0/sessions", {
      body: { data: { type: "session", attributes: { agent_id: agentId, authentication_supported: [{ authentication_class: "pop", authentication_type: "tpm_pop" }] } } }
    })
    const sessionId = created.json.data.id as string
    const challenge = created.json.data.attributes.authentication_requested[0].chosen_parameters.challenge as string
    const proof = yield* Effect.orDie(popProof(sim.tpm, sim.id, challenge))
    const proved = yield* env.request("PATCH", `/v3.0/sessions/${sessionId}`, {
      body: { data: { type: "session", id: sessionId, attributes: { agent_id: agentId, authentication_provided: [{ authentication_class: "pop", authentication_type: "tpm_pop", data: proof }] } } }
    })
    return { created, proved, token: proved.json?.data?.attributes?.token as string | undefined, sessionId, challenge }
  })

/** Phase 1 and phase 2; `tamper` may change the evidence before it is sent. */
/** Phase 1 alone: the simulated agent's capabilities POSTed (an agent that stops there leaves the attestation awaiting evidence). */
export const createAttestation = (agentId: string, token: string) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const sim = yield* SimAgent
    const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
    return yield* env.request("POST", `/v3.0/agents/${agentId}/attestations`, {
      token,
      body: { data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported, system_info: { boot_time: caps.bootTime } } } }
    })
  })

export const attestOnce = (agentId: string, token: string, tamper: (e: any) => any = (e) => e) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const sim = yield* SimAgent
    const created = yield* createAttestation(agentId, token)
    if (created.status !== 201) return { created, submitted: undefined }
    const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, created.json.data.attributes.evidence_requested))
    const submitted = yield* env.request("PATCH", created.headers["location"]!, {
      token,
      body: { data: { type: "attestation", attributes: { evidence_collected: tamper(evidence) } } }
    })
    return { created, submitted }
  })

/** The latest attestation as admin once its background verification finished (generous bound: a loaded machine). */
export const verdict = (agentId: string) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const started = Date.now()
    for (;;) {
      const latest = yield* env.request("GET", `/v3.0/agents/${agentId}/attestations/latest`, { admin: true })
      if (latest.json?.data?.attributes?.stage === "verification_complete" || Date.now() - started > 60_000) return latest
      yield* Effect.sleep("50 millis")
    }
  })

/**
 * The push agent program's identity made in `dataDir` (on the TPM in context), enrolled as a push
 * agent with its AK and a runtime policy of its machine; runPushAgent's options against the test
 * verifier (attesting every second, short backoff).
 */
export const enrolledPushAgent = (agentId: string, dataDir: string) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const identity = yield* establishTpmIdentity({ agentId, dataDir, ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } })
    const list = Option.getOrThrow(yield* Effect.orDie((yield* MeasurementSource).imaList(0))).list
    yield* Effect.orDie((yield* Agents).add(agentId, {
      ...validBody(),
      ak_tpm: b64(identity.ak.public),
      runtime_policy: b64(policyOfMachine(list)),
      accept_tpm_hash_algs: ["sha256"],
      accept_tpm_signing_algs: ["rsassa"],
      attestation_model: "push"
    }))
    return {
      agentId,
      dataDir,
      contactIp: "127.0.0.1",
      contactPort: 9002,
      verifierUrl: env.url,
      verifierCa: env.ca,
      attestationIntervalSeconds: 1,
      backoff: { initialMs: 100, maxMs: 400, multiplier: 2, maxRetries: 5, jitter: false }
    } satisfies PushAgentOptions
  })

/** A PoP session of the simulated agent through the Sessions service (no HTTP): created from `clientAddress`, then proved. */
export const proveSession = (agentId: string, clientAddress = "127.0.0.1") =>
  Effect.gen(function*() {
    const sim = yield* SimAgent
    const sessions = yield* Sessions
    const s = yield* sessions.create({ agentId, methods: [{ authentication_class: "pop", authentication_type: "tpm_pop" }], clientAddress })
    return yield* sessions.prove({ sessionId: s.session_id, agentId, proof: yield* Effect.orDie(popProof(sim.tpm, sim.id, s.challenge)), clientAddress })
  })

/**
 * A push agent's TPM identity in `dataDir` (as the agent itself makes it) and the admin's
 * enrolment of it at the verifier in context: its AK and a runtime policy of its machine.
 */
export const pushAgentIdentity = (agentId: string, dataDir: string) =>
  Effect.gen(function*() {
    const identity = yield* establishTpmIdentity({ agentId, dataDir, ekAlg: "rsa", ak: { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" } })
    const source = yield* MeasurementSource
    const list = Option.getOrThrow(yield* Effect.orDie(source.imaList(0))).list
    /** The admin's creation body (POST /v2.x/agents/:id) of this push agent. */
    const body = { ...validBody(), ak_tpm: b64(identity.ak.public), runtime_policy: b64(policyOfMachine(list)), accept_tpm_hash_algs: ["sha256"], accept_tpm_signing_algs: ["rsassa"], attestation_model: "push" }
    const enrol = Effect.flatMap(Agents, (agents) => agents.add(agentId, body))
    return { identity, body, enrol }
  })

/** The push agent's options in tests: this verifier, an attestation every second, a quick backoff. */
export const testPushAgentOptions = (o: { readonly agentId: string; readonly dataDir: string; readonly verifierUrl: string; readonly verifierCa: string }) => ({
  agentId: o.agentId,
  dataDir: o.dataDir,
  contactIp: "127.0.0.1",
  contactPort: 9002,
  verifierUrl: o.verifierUrl,
  verifierCa: o.verifierCa,
  attestationIntervalSeconds: 1,
  backoff: { initialMs: 100, maxMs: 400, multiplier: 2, maxRetries: 5, jitter: false }
})
