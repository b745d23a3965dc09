/**
 * Registrar throughput: registrations + activations per second against a running registrar (real
 * sockets, keep-alive HTTP), with SQLite and with PostgreSQL. The agents are simulated in this
 * process (the simulator's EK and AKs, TPM2_ActivateCredential, the HMAC), so their TPM work is
 * part of each cycle as it is for a real agent. Baseline: GET /version round trips on the same
 * server in the same run. MakeCredential's share is its measured per-call cost times the number
 * of registrations over the wall time of the SQLite run.
 *
 *   npm run bench -- registrar [cycles]
 */
import { Effect, Either, Layer, Logger, LogLevel, Option } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import * as http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../src/tpm/simulator/TpmSimulator.js"
import { rawRequest } from "../src/http/client.js"
import { trustStoreOf } from "../src/pki/chain.js"
import { makeChallenge } from "../src/registrar/registration.js"
import { decodeCredentialFile } from "../src/tpm/credential.js"
import { parseTpm2bPublic } from "../src/tpm/public.js"
import { type Ak, Tpm } from "../src/tpm/Tpm.js"
import { postgresAvailable, postgresUrl } from "../test/support/requirements.js"
import { dropPgSchema, makeTestPki, pgLayer, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../test/registrar/harness.js"

const CYCLES = Number(process.argv[2] ?? 300)
const CONCURRENCY = 8
const pki = makeTestPki()
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

interface Agent {
  readonly ak: Ak
  readonly body: string
}

const run = (label: string, db: Layer.Layer<import("@effect/sql").SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const reg = yield* TestRegistrar
    const tpm = yield* Tpm
    const ekCert = Option.getOrThrow(yield* tpm.ekCertificate("rsa"))
    const agents: Array<Agent> = []
    for (let i = 0; i < 4; i++) {
      const ak = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
      agents.push({ ak, body: JSON.stringify({ ekcert: b64(ekCert), aik_tpm: b64(ak.public), mtls_cert: "disabled", ip: "127.0.0.1", port: 9002 }) })
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
    const send = (method: string, path: string, body?: string) =>
      rawRequest({
        method,
        baseUrl: reg.httpUrl,
        path,
        agent,
        ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } })
      }).pipe(Effect.orDie)

    // warm-up (JIT, connection pool), then the baseline: the platform's cheapest round trip
    yield* Effect.forEach(Array.from({ length: 200 }), () => send("GET", "/version"), { concurrency: CONCURRENCY, discard: true })
    const baseStart = performance.now()
    yield* Effect.forEach(Array.from({ length: CYCLES }), () => send("GET", "/version"), { concurrency: CONCURRENCY, discard: true })
    const versionPerS = CYCLES / ((performance.now() - baseStart) / 1000)

    const cycle = (i: number) =>
      Effect.gen(function*() {
        const a = agents[i % agents.length]!
        const id = `bench-${label}-${i}`
        const r = yield* send("POST", `/v2.6/agents/${id}`, a.body)
        if (r.status !== 200) return yield* Effect.dieMessage(`register ${id}: ${r.body}`)
        const blob = decodeCredentialFile(new Uint8Array(Buffer.from(JSON.parse(r.body).results.blob, "base64")))
        if (Either.isLeft(blob)) return yield* Effect.dieMessage(blob.left.message)
        const secret = yield* Effect.orDie(tpm.activateCredential(a.ak, blob.right))
        const tag = crypto.createHmac("sha384", Buffer.from(b64(secret), "utf8")).update(id).digest("hex")
        const act = yield* send("PUT", `/v2.6/agents/${id}/activate`, JSON.stringify({ auth_tag: tag }))
        if (act.status !== 200) return yield* Effect.dieMessage(`activate ${id}: ${act.body}`)
      })
    const start = performance.now()
    yield* Effect.forEach(Array.from({ length: CYCLES }, (_, i) => i), cycle, { concurrency: CONCURRENCY, discard: true })
    const seconds = (performance.now() - start) / 1000
    agent.destroy()
    return { label, perS: CYCLES / seconds, seconds, versionPerS }
  }).pipe(
    Effect.provide(Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db), TpmSimulator.layer({ seed: "bench-agents" })))
  )

/** MakeCredential alone (RSA 2048 EK): what the registrar spends per registration on it. */
const makeCredentialMs = Effect.gen(function*() {
  const tpm = yield* Tpm
  const ek = Either.getOrThrow(parseTpm2bPublic(yield* tpm.ekPublic("rsa")))
  const ak = Either.getOrThrow(parseTpm2bPublic((yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })).public))
  const n = 500
  const start = performance.now()
  for (let i = 0; i < n; i++) makeChallenge({ ekPublic: ek, akPublic: ak })
  return (performance.now() - start) / n
}).pipe(Effect.provide(TpmSimulator.layer({ seed: "bench-mc" })))

const main = Effect.gen(function*() {
  const mcMs = yield* makeCredentialMs
  const sqlite = yield* run("sqlite", sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-bench-reg-")), "registrar.sqlite")))
  console.log(`sqlite: ${CYCLES} register+activate cycles in ${sqlite.seconds.toFixed(2)} s = ${sqlite.perS.toFixed(1)}/s (concurrency ${CONCURRENCY}); baseline GET /version ${sqlite.versionPerS.toFixed(0)}/s; ratio ${(sqlite.perS / sqlite.versionPerS).toFixed(3)}`)
  let pgPerS = Number.NaN
  if (yield* Effect.promise(() => postgresAvailable())) {
    const schema = `attest_bench_registrar_${process.pid}`
    const pg = yield* run("pg", pgLayer(postgresUrl, schema)).pipe(Effect.ensuring(dropPgSchema(postgresUrl, schema)))
    pgPerS = pg.perS
    console.log(`postgres: ${CYCLES} cycles in ${pg.seconds.toFixed(2)} s = ${pg.perS.toFixed(1)}/s; baseline GET /version ${pg.versionPerS.toFixed(0)}/s; ratio ${(pg.perS / pg.versionPerS).toFixed(3)}; pg/sqlite ${(pg.perS / sqlite.perS).toFixed(2)}`)
  } else {
    console.log(`postgres: not reachable at ${postgresUrl}; skipped`)
  }
  const share = (mcMs * CYCLES) / 1000 / sqlite.seconds
  console.log(`MakeCredential: ${mcMs.toFixed(3)} ms per call; ${(share * 100).toFixed(1)}% of the SQLite run's wall time`)
  console.log(`BENCH registrations_per_s_sqlite ${sqlite.perS.toFixed(1)} 1/s`)
  console.log(`BENCH registrations_per_s_pg ${Number.isNaN(pgPerS) ? "NaN" : pgPerS.toFixed(1)} 1/s`)
  console.log(`BENCH makecredential_share ${share.toFixed(4)}`)
})

// per-registration INFO lines would measure the console; warnings still show
Effect.runPromise(main.pipe(Logger.withMinimumLogLevel(LogLevel.Warning), Effect.ensuring(Effect.sync(() => removePki(pki))))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
