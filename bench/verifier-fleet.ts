/**
 * One verifier (the domain + the pull loop on SQLite, in this process) attesting a fleet of N
 * simulated agents served by a separate process (bench/_fleet.ts: one HTTPS listener per agent,
 * RSA-2048 and ECC P-256 AKs, IMA lists growing PER_QUOTE entries per quote, a shared runtime
 * policy of 100,000 digests) at quote_interval = 2 s, N increasing (default 100, 300, 1000) until
 * agents miss their schedule. Per step, over a window: the verifier's CPU (process.cpuUsage of
 * this process) per attestation, the agents on schedule (at least 80% of the quotes the interval
 * allows), and heap per agent. Baseline in the same run: evaluateEvidence of one comparable round
 * in process (what an attestation cannot avoid), and the ratio of the two.
 *
 *   npm run bench -- verifier-fleet [steps, e.g. 100,300,1000] [window seconds, default 16]
 */
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Either, Layer, Logger, LogLevel, Option } from "effect"
import { makeRuntimePolicy, decodeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { DbLive } from "../src/db/Sql.js"
import { VerifierConfig } from "../src/config/services.js"
import { encodeImaNg } from "../src/ima/encode.js"
import { compilePolicy } from "../src/ima/policy.js"
import { initCa } from "../src/pki/ca.js"
import { marshalAttest } from "../src/tpm/attest.js"
import { TPM_GENERATED_VALUE } from "../src/tpm/constants.js"
import { marshalPcrBlob } from "../src/tpm/pcrBlob.js"
import { marshalTpm2bPublic, nameOf } from "../src/tpm/public.js"
import { encodeQuoteString } from "../src/tpm/quoteString.js"
import { marshalSignature } from "../src/tpm/signature.js"
import { Agents } from "../src/verifier/domain/Agents.js"
import { AgentRepo } from "../src/verifier/domain/repo/AgentRepo.js"
import { makeAgentClient } from "../src/verifier/pull/AgentClient.js"
import { VerifierClientTls } from "../src/verifier/pull/ClientTls.js"
import {
  defaultSeverityPolicy,
  evaluateEvidence,
  type EvaluationState,
  initialEvaluationState,
  nkPcrValue,
  parseTpmPolicy
} from "../src/verifier/index.js"
import { PollerLive } from "../src/verifier/pull/Poller.js"
import { Policies } from "../src/verifier/domain/policy/Policies.js"
import { makeAk, signAttest } from "../test/tpm/quoteFixture.js"
import { fleetAgentBody, fleetPolicyFile, PER_QUOTE, POLICY_FILES } from "./_fleet.js"
import { cpuMs as cpuMsOf } from "./_procCpu.js"

const STEPS = (process.argv[2] ?? "100,300,1000").split(",").map(Number)
const WINDOW_S = Number(process.argv[3] ?? 16)
const QUOTE_INTERVAL = 2
const WARMUP_S = 2
const ON_SCHEDULE = 0.8

const dir = mkdtempSync(join(tmpdir(), "attest-bench-fleet-"))
const caDir = join(dir, "ca")
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const heapKb = () => {
  ;(globalThis as { gc?: () => void }).gc?.()
  return process.memoryUsage().heapUsed / 1024
}

/** The runtime policy both processes derive: POLICY_FILES paths with their digests. */
const policyDocument = () => {
  const digests: Record<string, Array<string>> = {}
  for (let i = 0; i < POLICY_FILES; i++) {
    const f = fleetPolicyFile(i)
    digests[f.path] = [Buffer.from(f.digest).toString("hex")]
  }
  return makeRuntimePolicy({ digests, excludes: ["boot_aggregate"] })
}

/** ms of CPU per evaluateEvidence of a partial RSA round with PER_QUOTE new entries on the 100k policy. */
const baseline = (doc: ReturnType<typeof policyDocument>) => {
  const compiled = Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(doc))))
  const ak = makeAk("rsa")
  const nk = "-----BEGIN PUBLIC KEY-----\nbench\n-----END PUBLIC KEY-----\n"
  const pcr16 = new Uint8Array(nkPcrValue("sha256", nk))
  const policy = {
    ak: marshalTpm2bPublic(ak.public),
    accept: { hash: ["sha256"], encryption: ["rsa", "ecc"], signing: ["rsassa", "ecdsa"] },
    tpmPolicy: Either.getOrThrow(parseTpmPolicy(`{"mask": "0x400"}`)),
    runtimePolicy: compiled,
    options: { severity: defaultSeverityPolicy, measuredBootEvaluate: "once" as const, reportTomtou: false, bindNk: true, checkClock: true }
  }
  const lines: Array<string> = []
  let pcr10 = new Uint8Array(32)
  let next = 0
  const measure = () => {
    const f = fleetPolicyFile(next++)
    const e = encodeImaNg(f.digest, f.path, { banks: ["sha256"] })
    lines.push(e.line)
    pcr10 = new Uint8Array(createHash("sha256").update(pcr10).update(e.templateHashes[0]!.digest).digest())
  }
  let state: EvaluationState = { ...initialEvaluationState, nk }
  let clock = 1_000_000n
  let spent = 0
  const ROUNDS = 400
  for (let r = 0; r < ROUNDS + 20; r++) {
    for (let k = 0; k < PER_QUOTE; k++) measure()
    const nonce = `benchNonce${String(r).padStart(10, "0")}`
    const sel = [{ hash: "sha256" as const, pcrs: [10, 16], sizeofSelect: 3 }]
    clock += 2000n
    const attest = marshalAttest({
      magic: TPM_GENERATED_VALUE,
      type: "quote",
      qualifiedSigner: nameOf(ak.public),
      extraData: new Uint8Array(Buffer.from(nonce)),
      clockInfo: { clock, resetCount: 1, restartCount: 0, safe: true },
      firmwareVersion: 1n,
      attested: { pcrSelect: sel, pcrDigest: new Uint8Array(createHash("sha256").update(pcr10).update(pcr16).digest()) }
    })
    const quote = encodeQuoteString({
      attest,
      signature: marshalSignature(signAttest(ak, attest)),
      pcrBlob: marshalPcrBlob({ selection: sel, values: [{ hash: "sha256", values: new Map([[10, pcr10], [16, pcr16]]) }] })
    })
    const from = state.ima.nextEntry
    const list = lines.slice(from).join("\n") + "\n"
    const t = cpuMs()
    const ev = evaluateEvidence(
      { _tag: "tpm", nonce: new Uint8Array(Buffer.from(nonce)), quote, hash_alg: "sha256", enc_alg: "rsa", sign_alg: "rsassa", boottime: 1, ima_measurement_list: list, ima_measurement_list_entry: from },
      policy,
      state
    )
    if (r >= 20) spent += cpuMs() - t
    if (ev.failures.length > 0) throw new Error(`baseline round failed: ${ev.failures[0]!.type}: ${ev.failures[0]!.context.message}`)
    state = ev.nextState
  }
  return spent / ROUNDS
}

/** BENCH_PROF=<prefix>: a CPU profile of this process during each window (node:inspector). */
const startProfile = Effect.promise(async () => {
  const inspector = await import("node:inspector")
  const session = new inspector.Session()
  session.connect()
  const post = (method: string, params?: object) =>
    new Promise<any>((resolve, reject) => session.post(method, params ?? {}, (e, r) => (e ? reject(e) : resolve(r))))
  await post("Profiler.enable")
  await post("Profiler.start")
  return (file: string) =>
    Effect.promise(async () => {
      const { profile } = await post("Profiler.stop")
      const { writeFileSync } = await import("node:fs")
      writeFileSync(file, JSON.stringify(profile))
      session.disconnect()
    })
})

interface FleetAgent {
  readonly id: string
  readonly port: number
  readonly ak: string
  readonly enc: string
}

const startFleet = (n: number) =>
  Effect.acquireRelease(
    Effect.async<{ agents: Array<FleetAgent>; cert: string; pid: number; kill: () => void }, Error>((resume) => {
      const child = spawn(process.execPath, ["--import", "tsx", "bench/_fleet.ts", String(n), caDir], { stdio: ["ignore", "pipe", "inherit"] })
      let buffer = "\n"
      child.stdout.on("data", (c: Buffer) => {
        buffer += c.toString("utf8")
        const nl = buffer.indexOf("\n{")
        const end = nl < 0 ? -1 : buffer.indexOf("\n", nl + 1)
        if (end >= 0) {
          const ready = JSON.parse(buffer.slice(nl + 1, end))
          resume(Effect.succeed({ agents: ready.agents, cert: ready.cert, pid: child.pid!, kill: () => child.kill("SIGKILL") }))
        }
      })
      child.on("exit", (code) => resume(Effect.fail(new Error(`fleet exited with ${code}`))))
    }),
    (f) => Effect.sync(f.kill)
  )

const program = Effect.gen(function*() {
  yield* initCa({ dir: caDir })
  const read = (f: string) => readFileSync(join(caDir, f), "utf8")
  const doc = policyDocument()
  const policyText = JSON.stringify(doc)
  console.log(`runtime policy: ${POLICY_FILES} digests, ${(policyText.length / 1e6).toFixed(1)} MB of JSON`)
  const evaluateMs = baseline(doc)
  console.log(`baseline: evaluateEvidence of one partial RSA round (${PER_QUOTE} new entries, 100k policy) = ${evaluateMs.toFixed(3)} ms CPU`)

  const maxN = Math.max(...STEPS)
  const t0 = Date.now()
  const fleet = yield* startFleet(maxN)
  console.log(`fleet: ${fleet.agents.length} agents listening (separate process) in ${((Date.now() - t0) / 1000).toFixed(1)} s`)

  const layer = Layer.mergeAll(Agents.Default, Policies.Default, AgentRepo.Default).pipe(
    Layer.provideMerge(PollerLive),
    Layer.provideMerge(Layer.mergeAll(
      DbLive({ database_url: "", data_dir: join(dir, "db") }, "verifier"),
      VerifierConfig.test({ quote_interval: QUOTE_INTERVAL, enabled_revocation_notifications: [], request_timeout: 30, verifier_id: "default" }),
      VerifierClientTls.fromPem({ cert: read("client-cert.crt"), key: read("client-private.pem") })
    ))
  )
  const ctx = yield* Layer.build(layer)
  const agents = Context.get(ctx, Agents)
  const sql = Context.get(ctx, SqlClient.SqlClient)
  if (process.env["BENCH_SYNC"] === "normal") yield* sql`PRAGMA synchronous = NORMAL`
  console.log(`SQLite synchronous = ${JSON.stringify((yield* sql`PRAGMA synchronous`)[0])}`)
  yield* Context.get(ctx, Policies).addRuntime("fleet", { runtime_policy: Buffer.from(policyText).toString("base64") })
  const heapBefore = heapKb()
  const serverCert = fleet.cert
  const counts = Effect.map(
    sql<{ agent_id: string; attestation_count: number; operational_state: number }>`SELECT agent_id, attestation_count, operational_state FROM verifier_agents`,
    (rows) => new Map(rows.map((r) => [String(r.agent_id), { count: Number(r.attestation_count), state: Number(r.operational_state) }]))
  )

  let added = 0
  let best: { n: number; cpuPerAttestation: number } | undefined
  let kbPerAgent = 0
  let last: { n: number; cpuPerAttestation: number } | undefined
  for (const n of STEPS) {
    for (; added < n; added++) {
      const a = fleet.agents[added]!
      yield* agents.add(a.id, fleetAgentBody(a, serverCert))
    }
    // warm-up: every agent attested twice (connections made, full first quotes behind), at most 60 s
    const warm = Date.now()
    for (;;) {
      const c = yield* counts
      const ready = [...c.values()].filter((a) => a.count >= 2).length
      if (ready >= n || Date.now() - warm > 60_000) break
      yield* sleep(500)
    }
    yield* sleep(WARMUP_S * 1000)
    const before = yield* counts
    const profiling = process.env["BENCH_PROF"] !== undefined ? yield* startProfile : undefined
    const cpu0 = cpuMs()
    const fleetCpu0 = cpuMsOf(fleet.pid)
    yield* sleep(WINDOW_S * 1000)
    const cpu = cpuMs() - cpu0
    const fleetCpu = cpuMsOf(fleet.pid) - fleetCpu0
    if (profiling !== undefined) yield* profiling(`${process.env["BENCH_PROF"]}-${n}.cpuprofile`)
    const after = yield* counts
    let total = 0
    let onSchedule = 0
    let failed = 0
    const need = Math.floor((WINDOW_S / QUOTE_INTERVAL) * ON_SCHEDULE)
    for (const [id, a] of after) {
      const d = a.count - (before.get(id)?.count ?? 0)
      total += d
      if (d >= need) onSchedule++
      if (a.state !== 3) failed++
    }
    const heap = heapKb()
    kbPerAgent = (heap - heapBefore) / n
    const cpuPerAttestation = total === 0 ? Number.POSITIVE_INFINITY : cpu / total
    console.log(
      `N=${n} (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores): ${total} attestations in ${WINDOW_S} s (${(total / WINDOW_S).toFixed(0)}/s), ${onSchedule}/${n} agents on schedule (>= ${need}), ` +
        `${failed} not in GET_QUOTE, fleet CPU ${((fleetCpu / (WINDOW_S * 1000)) * 100).toFixed(0)}% of a core, verifier CPU ${cpu.toFixed(0)} ms (${((cpu / (WINDOW_S * 1000)) * 100).toFixed(0)}% of a core) = ` +
        `${cpuPerAttestation.toFixed(3)} ms per attestation (${(cpuPerAttestation / evaluateMs).toFixed(1)}x evaluateEvidence), heap ${(heap / 1024).toFixed(0)} MB`
    )
    last = { n, cpuPerAttestation }
    if (onSchedule < n * 0.99) {
      console.log(`N=${n}: agents miss their schedule; stopping`)
      break
    }
    best = { n, cpuPerAttestation }
  }
  if (process.env["BENCH_DIAG"] === "1") {
    const repo = Context.get(ctx, AgentRepo)
    const id = fleet.agents[0]!.id
    const plan = yield* sql.unsafe(`EXPLAIN QUERY PLAN SELECT a.generation, a.operational_state, r.checksum AS rc, m.checksum AS mc FROM verifier_agents a JOIN verifier_runtime_policies r INDEXED BY verifier_runtime_policy_facts ON r.name = a.runtime_policy_name JOIN verifier_mb_policies m INDEXED BY verifier_mb_policy_facts ON m.name = a.mb_policy_name WHERE a.agent_id = '${id}'`)
    console.log("policy facts plan:", JSON.stringify(plan.map((r: any) => r.detail)))
    const time = (label: string, e: Effect.Effect<unknown, unknown>) =>
      Effect.gen(function*() {
        const t = cpuMs()
        for (let i = 0; i < 500; i++) yield* e
        console.log(`${label}: ${((cpuMs() - t) / 500).toFixed(3)} ms CPU`)
      })
    yield* time("findView", repo.findView(id))
    const row = (yield* repo.find(id)).pipe(Option.getOrThrow)
    const a0 = fleet.agents[0]!
    const client = yield* makeAgentClient({ cert: read("client-cert.crt"), key: read("client-private.pem"), agentCa: undefined, mtls: true }, 30)
    const target = { agentId: "diag", ip: "127.0.0.1", port: a0.port, mtlsCert: fleet.cert, apiVersion: "2.5" }
    yield* time("integrityQuote (HttpApiClient, TLS keep-alive)", client.integrityQuote(target, { nonce: "abcdefghij0123456789", mask: 0x400, partial: 1, imaEntry: 1_000_000 }).pipe(Effect.scoped))
    yield* time("recordVerdict", repo.recordVerdict(id, { generation: -1, ownerEpoch: 0 }, { operationalState: 3, valid: true, receivedAt: 1, evaluationState: row.evaluation_state, nextPollAt: 2 }))
  }
  const shown = best ?? last!
  console.log(`verifier CPU per attestation / evaluateEvidence alone = ${(shown.cpuPerAttestation / evaluateMs).toFixed(1)}`)
  console.log(`BENCH verifier_cpu_ms_per_attestation ${shown.cpuPerAttestation.toFixed(3)} ms`)
  console.log(`BENCH verifier_max_agents_on_schedule ${best?.n ?? 0} agents`)
  console.log(`BENCH verifier_kb_per_agent ${kbPerAgent.toFixed(1)} KB`)
  console.log(`BENCH verifier_evaluate_baseline_ms ${evaluateMs.toFixed(3)} ms`)
})

Effect.runPromise(program.pipe(Effect.scoped, Logger.withMinimumLogLevel(process.env["BENCH_LOG"] === "1" ? LogLevel.Info : LogLevel.Warning))).then(
  () => {
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  },
  (e) => {
    console.error(e)
    rmSync(dir, { recursive: true, force: true })
    process.exit(1)
  }
)
