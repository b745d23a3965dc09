/**
 * A fleet for the dashboard's tests: the registrar (both listeners, SQLite) and the verifier's API
 * (HTTPS mTLS, SQLite, no poller: agents stay in their initial state) started in-process on free
 * loopback ports with the throw-away CA of the registrar harness, and the dashboard on a free port
 * reading both with the CA's admin certificate. Agents are registered with the in-memory TPM
 * simulator (EK certificate from the simulated manufacturer) and added to the verifier with the
 * body Keylime's tenant sends.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { SamplerLive, Sampler } from "../../src/dashboard/Sampler.js"
import { DashboardServerLive, DashboardUrl } from "../../src/dashboard/Server.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { SqlLive } from "../../src/db/Sql.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { testDatabase } from "../support/db.js"
import { agentBody, call, registerAndActivate, sqliteLayer, TestRegistrar, testRegistrarLayer, type TestPki } from "../registrar/harness.js"
import { startVerifier, vcall, type VerifierUnderTest } from "../verifier/apiHarness.js"
import { validBody } from "../verifier/support.js"

export { makeTestPki, removePki } from "../registrar/harness.js"

export const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
export const simulatorCaSubject = new crypto.X509Certificate(simulatorManufacturerCa().pem).subject.split("\n").join(", ")

export interface Fleet {
  readonly pki: TestPki
  readonly verifier: VerifierUnderTest
  readonly registrarHttp: string
  readonly registrarHttps: string
  readonly dashboardUrl: string
  readonly sampler: Context.Tag.Service<Sampler>
  readonly addToVerifier: (id: string) => Effect.Effect<void>
  readonly deleteFromVerifier: (id: string) => Effect.Effect<void>
  /**
   * A verdict as the pull loop writes it (AgentRepo, the verifier's own write path, on the
   * verifier's database): a passed attestation, or a failure of the given type (INVALID_QUOTE).
   */
  readonly verdict: (id: string, v: { readonly valid: true } | { readonly valid: false; readonly failureType: string }) => Effect.Effect<void>
  /** A loop of `runner` (cluster mode's `host:port`) takes the agent, as AgentLoop does when it starts. */
  readonly takeOwnership: (id: string, runner: string) => Effect.Effect<void>
  /** Registers with the registrar (and activates unless `activate` is false). */
  readonly register: (id: string, activate?: boolean) => Effect.Effect<void>
}

export interface FleetOptions {
  /** The verifier URL the dashboard is given (default: the started verifier's). */
  readonly verifierUrl?: string
  readonly intervalMs?: number
}

/** The dashboard's sampler and web server, both in context (tests read the sampler). */
export const dashboardLayer = (o: { verifierUrl: string; registrarUrl: string; pki: TestPki; intervalMs?: number }) =>
  DashboardServerLive({ port: 0 }).pipe(
    Layer.provideMerge(SamplerLive({ verifierUrl: o.verifierUrl, registrarUrl: o.registrarUrl, tls: o.pki.clients.admin, intervalMs: o.intervalMs ?? 500, registrarEvery: 1 }))
  )

export const startFleet = (pki: TestPki, o: FleetOptions = {}) =>
  Effect.gen(function*() {
    const regCtx = yield* Layer.build(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-dash-reg-")), "registrar.sqlite"))))
    const reg = Context.get(regCtx, TestRegistrar)
    const verifierDb = yield* testDatabase("sqlite")
    const verifier = yield* startVerifier({ pki, db: verifierDb })
    const repo = Context.get(yield* Layer.build(Layer.orDie(AgentRepo.Default.pipe(Layer.provide(SqlLive(verifierDb, "verifier"))))), AgentRepo)
    const tpmCtx = yield* Layer.build(Layer.orDie(TpmSimulator.layer({ seed: "dashboard-fleet" })))
    const tpm = Context.get(tpmCtx, Tpm)
    const dashCtx = yield* Layer.build(Layer.orDie(dashboardLayer({ verifierUrl: o.verifierUrl ?? verifier.url, registrarUrl: reg.httpsUrl, pki, ...(o.intervalMs === undefined ? {} : { intervalMs: o.intervalMs }) })))
    const expectStatus = (what: string, want: ReadonlyArray<number>) => (r: { status: number; body: string }) =>
      want.includes(r.status) ? Effect.void : Effect.dieMessage(`${what}: HTTP ${r.status} ${r.body}`)
    return {
      pki,
      verifier,
      registrarHttp: reg.httpUrl,
      registrarHttps: reg.httpsUrl,
      dashboardUrl: Context.get(dashCtx, DashboardUrl),
      sampler: Context.get(dashCtx, Sampler),
      addToVerifier: (id: string) =>
        Effect.flatMap(vcall(pki, verifier, { method: "POST", path: `/v2.6/agents/${id}`, json: validBody() }), expectStatus(`add ${id}`, [200])),
      // stop first: without a poller an active agent would only be marked TERMINATED (202)
      deleteFromVerifier: (id: string) =>
        Effect.flatMap(vcall(pki, verifier, { method: "PUT", path: `/v2.6/agents/${id}/stop` }), expectStatus(`stop ${id}`, [200])).pipe(
          Effect.zipRight(vcall(pki, verifier, { method: "DELETE", path: `/v2.6/agents/${id}` })),
          Effect.flatMap(expectStatus(`delete ${id}`, [200]))
        ),
      verdict: (id, v) =>
        Effect.gen(function*() {
          const row = Option.getOrThrow(yield* repo.find(id))
          const owner = Option.getOrThrow(yield* repo.ownership(id))
          const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
          const won = yield* repo.recordVerdict(id, { generation: row.generation, ownerEpoch: owner.ownerEpoch }, {
            operationalState: v.valid ? 3 : 9,
            valid: v.valid,
            receivedAt: now,
            event: v.valid ? undefined : { eventId: v.failureType, severityLevel: 1 },
            evaluationState: null,
            algorithms: { hashAlg: "sha256", encAlg: "rsa", signAlg: "rsassa" },
            nextPollAt: null
          })
          if (!won) return yield* Effect.dieMessage(`verdict for ${id} lost to an admin change`)
        }).pipe(Effect.orDie),
      takeOwnership: (id, runner) =>
        repo.takeOwnership(id, "default", runner).pipe(
          Effect.flatMap((epoch) => (Option.isSome(epoch) ? Effect.void : Effect.dieMessage(`${id}: not taken`))),
          Effect.orDie
        ),
      register: (id: string, activate = true) =>
        activate
          ? Effect.asVoid(registerAndActivate(pki, reg, tpm, id))
          : Effect.flatMap(agentBody(tpm), (a) => call(pki, reg, { method: "POST", path: `/v2.6/agents/${id}`, port: "http", json: a.body })).pipe(
            Effect.flatMap(expectStatus(`register ${id}`, [200]))
          )
    } satisfies Fleet
  })

/** GET on the dashboard with the Host header a browser sends; the body parsed as JSON. */
export const getJson = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await fetch(url, { headers })
    const text = await res.text()
    let json: any = undefined
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.status, json, text, contentType: res.headers.get("content-type") ?? "" }
  })

/**
 * The bundled `attest dashboard` (dist/cli/attest.js) as a child process, and the URL it prints
 * (waits up to 120 s); stopped with the scope.
 */
export const startDashboard = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const root = resolve(__dirname, "../..")
  return Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ child: ChildProcess; url: string }>((done, reject) => {
        const child = spawn(process.execPath, [join(root, "dist/cli/attest.js"), "dashboard", ...args], { cwd: root, env: { ...process.env, ...env } })
        let out = ""
        let err = ""
        const timer = setTimeout(() => reject(new Error(`no URL within 120 s; stdout: ${out} stderr: ${err}`)), 120_000)
        child.stderr!.on("data", (d: Buffer) => (err += d.toString()))
        child.stdout!.on("data", (d: Buffer) => {
          out += d.toString()
          const m = /attest dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)
          if (m) {
            clearTimeout(timer)
            done({ child, url: m[1]! })
          }
        })
        child.once("exit", (code) => reject(new Error(`exited ${code}; stdout: ${out} stderr: ${err}`)))
      })
    ),
    ({ child }) => Effect.sync(() => child.kill("SIGTERM"))
  )
}
