/**
 * The parts of test/faults/componentDeath.test.ts: `attest registrar`, `attest agent` and
 * `attest push-agent` as real child processes on configuration files written here (simulated TPMs
 * whose state lives in each agent's data directory, so a restarted process is the same TPM after a
 * reset), the tenant's reads of the registrar's admin API (mTLS), the verifier's enrolment bodies
 * made from what the registrar holds (as `attest tenant add` makes them), and newcomers: agents
 * registered from the test process (a simulated TPM each) while the registrar is killed.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Either, Layer } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { register, type RetryPolicy } from "../../src/agent/Registration.js"
import { establishTpmIdentity } from "../../src/agent/tpmIdentity.js"
import { AGENT_API_VERSIONS } from "../../src/agent/Http.js"
import { DbLive, type DatabaseOptions } from "../../src/db/Sql.js"
import { rawRequest } from "../../src/http/client.js"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import type { TestCa } from "../agent/support.js"
import { startAttest } from "../support/attestProcess.js"
import { agentBody, machinePolicyBase64 } from "../verifier/pollerSupport.js"
import { validBody } from "../verifier/support.js"

const WAIT_MS = 120_000

/** A registrar's record as its admin API shows it (the fields a record must keep across a kill). */
export interface RegistrarRecord {
  readonly agent_id: string
  readonly ek_tpm: string
  readonly aik_tpm: string
  readonly ip: string | null
  readonly port: number | null
  readonly mtls_cert: string | null
  readonly regcount: number
}

const write = (file: string, lines: ReadonlyArray<string>) => {
  writeFileSync(file, [...lines, ""].join("\n"))
  return file
}

/**
 * `[registrar]` on `db`, TLS and admins from the test CA, the simulator's manufacturer CA as EK
 * trust store, and `ekCas` (PEM) beside it (a swtpm's local CA).
 */
export const writeRegistrarConfig = (
  dir: string,
  o: { readonly ca: TestCa; readonly db: DatabaseOptions; readonly port: number; readonly tlsPort: number; readonly ekCas?: ReadonlyArray<string> }
) => {
  const ekCaDir = join(dir, "tpm_cert_store")
  mkdirSync(ekCaDir, { recursive: true })
  writeFileSync(join(ekCaDir, "simulator-ca.pem"), simulatorManufacturerCa().pem)
  for (const [i, pem] of (o.ekCas ?? []).entries()) writeFileSync(join(ekCaDir, `ek-ca-${i}.pem`), pem)
  return write(join(dir, "registrar.toml"), [
    "[registrar]",
    `port = ${o.port}`,
    `tls_port = ${o.tlsPort}`,
    `tls_dir = "${o.ca.dir}"`,
    `ca_dir = "${o.ca.dir}"`,
    `data_dir = "${o.db.data_dir === "" ? join(dir, "registrar") : o.db.data_dir}"`,
    `database_url = "${o.db.database_url}"`,
    `ek_ca_dir = "${ekCaDir}"`,
    "metrics_port = 0"
  ])
}

/** `[agent]` of a pull agent: its own port (also its contact port), the test CA's clients trusted; `extra` lines after. */
export const writePullAgentConfig = (
  dir: string,
  o: { readonly id: string; readonly ca: TestCa; readonly port: number; readonly registrarPort: number; readonly extra?: ReadonlyArray<string> }
) =>
  write(join(dir, `${o.id}.toml`), [
    "[agent]",
    `uuid = "${o.id}"`,
    `data_dir = "${join(dir, o.id)}"`,
    `trusted_client_ca = ["${join(o.ca.dir, "cacert.crt")}"]`,
    `port = ${o.port}`,
    `contact_port = ${o.port}`,
    `registrar_port = ${o.registrarPort}`,
    ...(o.extra ?? [])
  ])

/** `[agent]` of a push agent: the verifier at `verifierUrl`, its interval, a quick backoff (ms); `extra` lines after. */
export const writePushAgentConfig = (
  dir: string,
  o: {
    readonly id: string
    readonly ca: TestCa
    readonly registrarPort: number
    readonly verifierUrl: string
    readonly interval: number
    readonly extra?: ReadonlyArray<string>
  }
) =>
  write(join(dir, `${o.id}.toml`), [
    "[agent]",
    `uuid = "${o.id}"`,
    `data_dir = "${join(dir, o.id)}"`,
    `registrar_port = ${o.registrarPort}`,
    `verifier_url = "${o.verifierUrl}"`,
    `verifier_tls_ca_cert = "${join(o.ca.dir, "cacert.crt")}"`,
    `attestation_interval_seconds = ${o.interval}`,
    "exponential_backoff_initial_delay = 200",
    "exponential_backoff_max_delay = 1000",
    ...(o.extra ?? [])
  ])

/** A started `attest <args>` (with `env` added) that said `ready` (both patterns when two): its process, and when. */
export const startComponent = (args: ReadonlyArray<string>, ready: ReadonlyArray<RegExp>, env?: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const run = startAttest(args, env === undefined ? {} : { env })
    yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
    for (const pattern of ready) yield* Effect.promise(() => run.waitFor(pattern, WAIT_MS))
    return { run, readyAt: Date.now() }
  })

export const REGISTRAR_READY = [/attest registrar: agents \(HTTP\) on/, /attest registrar: admin \(HTTPS, mTLS\) on/]
export const VERIFIER_READY = [/attest verifier: API \(HTTPS, mTLS admin\) on/]
/** The pull agent says it serves once it registered and activated (it answers quotes before). */
export const pullAgentReady = (id: string) => [new RegExp(`attest agent ${id} serving on`)]
export const PUSH_AGENT_READY = [/pushing evidence to/]

/**
 * The tenant's read of one registration (GET /v2.6/agents/:id over mTLS, 5 s at most): the record,
 * or the status of a refusal, or the transport failure (the registrar is down).
 */
export const registrarRecord = (ca: TestCa, tlsPort: number, id: string) =>
  rawRequest({
    method: "GET",
    baseUrl: `https://127.0.0.1:${tlsPort}`,
    path: `/v2.6/agents/${id}`,
    tls: { ca: ca.caPem, cert: ca.clientCert, key: ca.clientKey }
  }).pipe(
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("no answer within 5 s") }),
    Effect.either,
    Effect.map(Either.map((r) => r.status === 200 ? { status: 200, record: recordOf(JSON.parse(r.body).results) } : { status: r.status, record: undefined }))
  )

const recordOf = (r: RegistrarRecord): RegistrarRecord => ({
  agent_id: r.agent_id,
  ek_tpm: r.ek_tpm,
  aik_tpm: r.aik_tpm,
  ip: r.ip,
  port: r.port,
  mtls_cert: r.mtls_cert,
  regcount: Number(r.regcount)
})

/** The tenant's read when the registrar must answer: its record, or the test dies naming the answer. */
export const activeRecord = (ca: TestCa, tlsPort: number, id: string) =>
  Effect.flatMap(registrarRecord(ca, tlsPort, id), (a) =>
    Either.isRight(a) && a.right.record !== undefined
      ? Effect.succeed(a.right.record)
      : Effect.die(new Error(`registrar record of ${id}: ${Either.isLeft(a) ? a.left.message : `status ${a.right.status}`}`)))

/** The enrolment body of a pull agent from its registrar record (the simulated machine's files allowed, PCR 10 only, no V). */
export const pullEnrolment = (r: RegistrarRecord) =>
  ({
    ...agentBody({ port: r.port ?? 0, akPublic: Buffer.from(r.aik_tpm, "base64"), serverCert: r.mtls_cert ?? "" }, { v: false }),
    cloudagent_ip: r.ip
  })

/** The enrolment body of a push agent from its registrar record. */
export const pushEnrolment = (r: RegistrarRecord) => ({
  ...validBody(),
  ak_tpm: r.aik_tpm,
  tpm_policy: JSON.stringify({ mask: "0x400" }),
  runtime_policy: machinePolicyBase64(),
  accept_tpm_hash_algs: ["sha256"],
  accept_tpm_signing_algs: ["rsassa"],
  attestation_model: "push"
})

/** What a registration row holds on disk (read with the registrar down): the record, its state and challenge. */
export interface RegistrationRowFacts extends RegistrarRecord {
  readonly active: number
  readonly challenge_key: string
}

/**
 * The registrar's table as a killed registrar left it, read through its own database layer (the
 * migrations find nothing to do), and SQLite's integrity check (PostgreSQL: "ok", it has none to run).
 */
export const registrarTable = (db: DatabaseOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<Record<string, unknown>>`SELECT agent_id, ek_tpm, aik_tpm, ip, port, mtls_cert, active, regcount, challenge_key
      FROM registrar_agents ORDER BY agent_id`
    const integrity = db.database_url === "" ? String(Object.values((yield* sql`PRAGMA integrity_check`)[0] ?? {})[0]) : "ok"
    const facts = rows.map((r): RegistrationRowFacts => ({
      agent_id: String(r["agent_id"]),
      ek_tpm: String(r["ek_tpm"]),
      aik_tpm: String(r["aik_tpm"]),
      ip: r["ip"] === null ? null : String(r["ip"]),
      port: r["port"] === null ? null : Number(r["port"]),
      mtls_cert: r["mtls_cert"] === null ? null : String(r["mtls_cert"]),
      active: Number(r["active"]),
      regcount: Number(r["regcount"]),
      challenge_key: String(r["challenge_key"])
    }))
    return { rows: facts, integrity }
  }).pipe(Effect.provide(DbLive(db, "registrar")), Effect.scoped, Effect.orDie)

const ECC_AK = { alg: "ecc", hash: "sha256", scheme: "ecdsa" } as const
/** Newcomers retry quickly: the registrar is down for a few seconds. */
const NEWCOMER_RETRY: RetryPolicy = { initialDelay: "100 millis", maxDelay: "500 millis" }

/**
 * An agent registered from this process: its simulated TPM (ECC keys: cheap to make) and identity,
 * and `register`, the whole exchange (register, ActivateCredential, activate) with the agents'
 * retries, to run as often as wanted (again = a re-registration with the same identity).
 */
export const newcomer = (id: string, dir: string, registrarPort: number) =>
  Effect.gen(function*() {
    const tpm = Context.get(yield* Layer.build(TpmSimulator.layer({ seed: `newcomer-${id}` })), Tpm)
    const identity = yield* establishTpmIdentity({ agentId: id, dataDir: join(dir, id), ekAlg: "ecc", ak: ECC_AK }).pipe(
      Effect.provideService(Tpm, tpm),
      Effect.orDie
    )
    const registration = register({
      registrarUrl: `http://127.0.0.1:${registrarPort}`,
      agentId: id,
      ekPublic: identity.ekPublic,
      ekCertificate: identity.ekCertificate,
      ak: identity.ak,
      mtlsCert: null,
      contactIp: "127.0.0.1",
      contactPort: 9002,
      versions: AGENT_API_VERSIONS
    }, NEWCOMER_RETRY).pipe(Effect.provideService(Tpm, tpm), Effect.provide(NodeHttpClient.layerUndici))
    return {
      id,
      ek: Buffer.from(identity.ekPublic).toString("base64"),
      ak: Buffer.from(identity.ak.public).toString("base64"),
      register: registration
    }
  })
