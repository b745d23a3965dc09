/**
 * One verifier — `attest verifier` as users run it (the bundle, its own process, pull mode, SQLite,
 * quote_interval 2 s; bench/_pullPhase.ts) — attesting a fleet of N simulated agents served by
 * another process (bench/_fleet.ts: one HTTPS listener per agent, RSA-2048 and ECC P-256 AKs, IMA
 * lists growing PER_QUOTE entries per quote, a shared runtime policy of 100,000 digests), N
 * increasing (default 100, 300, 1000) until agents miss their schedule; each N on a fresh verifier
 * and fleet. Per step, over a window after every agent attested twice: the verifier process's CPU
 * (/proc: every thread, GC and compiler included) per attestation, the agents on schedule (at least
 * 80% of the quotes the interval allows), and the CPU split by thread. Before the first step's
 * agents are added: the idle verifier's CPU per second (no agents; /proc schedstat, ns resolution),
 * and the floor of one attestation measured in this run (bench/_floor.ts: one signature check, the
 * IMA hashes, one empty keep-alive HTTPS request) with the ratio to it. Also in process:
 * evaluateEvidence of one comparable round.
 *
 *   npm run bench -- verifier-fleet [steps, e.g. 100,300,1000] [window seconds, default 16] [idle seconds, default 10]
 *   BENCH_ATTEST=<dir>/cli/attest.js: another build of attest (e.g. the one before a change), run the same way
 *   BENCH_PULL_PROF_DIR=<dir>: a CPU profile of each verifier (written when it exits); the idle and
 *   measured windows are printed in the profile's clock for bench/_profileSummary.ts
 */
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { decodeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { encodeImaNg } from "../src/ima/encode.js"
import { compilePolicy } from "../src/ima/policy.js"
import { CA_FILES } from "../src/pki/layout.js"
import { marshalAttest } from "../src/tpm/attest.js"
import { TPM_GENERATED_VALUE } from "../src/tpm/constants.js"
import { marshalPcrBlob } from "../src/tpm/pcrBlob.js"
import { marshalTpm2bPublic, nameOf } from "../src/tpm/public.js"
import { encodeQuoteString } from "../src/tpm/quoteString.js"
import { marshalSignature } from "../src/tpm/signature.js"
import {
  defaultSeverityPolicy,
  evaluateEvidence,
  type EvaluationState,
  initialEvaluationState,
  nkPcrValue,
  parseTpmPolicy
} from "../src/verifier/index.js"
import { makeAk, signAttest } from "../test/tpm/quoteFixture.js"
import { fleetPolicyFile, fleetRuntimePolicy, PER_QUOTE, POLICY_FILES } from "./_fleet.js"
import { type Floor, measureFloor } from "./_floor.js"
import { preciseCpuMs } from "./_procCpu.js"
import { startPull } from "./_pullPhase.js"

const STEPS = (process.argv[2] ?? "100,300,1000").split(",").map(Number)
const WINDOW_S = Number(process.argv[3] ?? 16)
const IDLE_S = Number(process.argv[4] ?? 10)
const WARMUP_S = 2
const IDLE_SETTLE_S = 20

const dir = mkdtempSync(join(tmpdir(), "attest-bench-fleet-"))
const caDir = join(dir, "ca")
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)
const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0)

/** The runtime policy both processes derive: POLICY_FILES paths with their digests. */
const policyDocument = fleetRuntimePolicy

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

const program = Effect.gen(function*() {
  const doc = policyDocument()
  console.log(`runtime policy: ${POLICY_FILES} digests, ${(JSON.stringify(doc).length / 1e6).toFixed(1)} MB of JSON`)
  const evaluateMs = baseline(doc)
  console.log(`in process: evaluateEvidence of one partial RSA round (${PER_QUOTE} new entries, 100k policy) = ${evaluateMs.toFixed(3)} ms CPU`)

  let idleMsPerS: number | undefined
  let floor: Floor | undefined
  const figures: Array<{ n: number; cpu: number; onSchedule: boolean }> = []
  for (const n of STEPS) {
    const onSchedule = yield* Effect.scoped(Effect.gen(function*() {
      const stepDir = mkdtempSync(join(dir, `n${n}-`))
      const t0 = Date.now()
      const pull = yield* startPull({
        agents: n,
        dir: stepDir,
        caDir,
        beforeEnrol: ({ pid, fleet }) =>
          Effect.gen(function*() {
            if (idleMsPerS !== undefined) return
            // idle: started, nothing enrolled; start-up's compilation and collections settle first
            yield* Effect.sleep(`${IDLE_SETTLE_S} seconds`)
            const c0 = preciseCpuMs(pid)
            const w0 = monotonicUs()
            yield* Effect.sleep(`${IDLE_S} seconds`)
            idleMsPerS = (preciseCpuMs(pid) - c0) / IDLE_S
            console.log(`idle verifier (no agents): ${idleMsPerS.toFixed(2)} ms CPU per second over ${IDLE_S} s (profile window ${w0} ${monotonicUs()})`)
            const read = (f: string) => readFileSync(join(caDir, f), "utf8")
            floor = yield* Effect.promise(() => measureFloor({ port: fleet.agents[0]!.port, serverCert: fleet.cert, clientCert: read(CA_FILES.clientCert), clientKey: read(CA_FILES.clientKey) }))
            console.log(
              `floor (this process): signature check RSA-2048 ${floor.rsaVerifyMs.toFixed(3)} ms, P-256 ${floor.eccVerifyMs.toFixed(3)} ms; ` +
                `IMA hashes ${floor.imaHashesMs.toFixed(3)} ms; empty keep-alive HTTPS request ${floor.requestMs.toFixed(3)} ms client CPU; total ${floor.totalMs.toFixed(3)} ms`
            )
          })
      })
      yield* pull.warm
      console.log(`N=${n}: verifier and fleet up, agents enrolled and attested twice in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
      yield* Effect.sleep(`${WARMUP_S} seconds`)
      const w0 = monotonicUs()
      const r = pull.begin()
      yield* Effect.sleep(`${WINDOW_S} seconds`)
      const f = pull.end(r)
      const ratio = floor === undefined ? "" : `, ${(f.cpuMsPerAttestation / floor.totalMs).toFixed(2)}x the floor`
      console.log(
        `N=${n} (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores): ${f.attestations} attestations in ${f.seconds.toFixed(1)} s ` +
          `(${(f.attestations / f.seconds).toFixed(0)}/s), ${f.onSchedule}/${n} agents on schedule, verifier ${f.cpuMsPerAttestation.toFixed(3)} ms CPU per attestation ` +
          `(kernel ${f.sysMsPerAttestation.toFixed(3)}${ratio}; ${(f.cpuMsPerAttestation / evaluateMs).toFixed(1)}x evaluateEvidence), RSS ${(rssKb(pull.pid) / 1024).toFixed(0)} MB` +
          `\n  by thread (ms per attestation): ${f.threads}\n  profile window ${w0} ${monotonicUs()}`
      )
      figures.push({ n, cpu: f.cpuMsPerAttestation, onSchedule: f.onSchedule >= n * 0.99 })
      return f.onSchedule >= n * 0.99
    }))
    if (!onSchedule) {
      console.log(`N=${n}: agents miss their schedule; stopping`)
      break
    }
  }
  const best = [...figures].reverse().find((f) => f.onSchedule) ?? figures[figures.length - 1]!
  for (const f of figures) console.log(`BENCH verifier_cpu_ms_per_attestation_at_${f.n} ${f.cpu.toFixed(3)} ms`)
  console.log(`BENCH verifier_cpu_ms_per_attestation ${best.cpu.toFixed(3)} ms`)
  console.log(`BENCH verifier_max_agents_on_schedule ${figures.filter((f) => f.onSchedule).map((f) => f.n).pop() ?? 0} agents`)
  if (idleMsPerS !== undefined) console.log(`BENCH verifier_idle_cpu_ms_per_s ${idleMsPerS.toFixed(2)} ms`)
  if (floor !== undefined) {
    console.log(`BENCH verifier_floor_ms ${floor.totalMs.toFixed(3)} ms`)
    console.log(`BENCH verifier_floor_ratio ${(best.cpu / floor.totalMs).toFixed(2)}`)
  }
  console.log(`BENCH verifier_evaluate_baseline_ms ${evaluateMs.toFixed(3)} ms`)
})

Effect.runPromise(program).then(
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
