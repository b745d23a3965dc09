/**
 * The push attestation's own path in one process, without HTTP: the verifier's Attestations
 * service (phase 1, phase 2 and the background verdict) on a fresh SQLite file (or PostgreSQL with
 * `pg`), one simulated push agent with its AK and a runtime policy of its IMA list, a clock moved
 * 2.1 s per attestation (quote_interval 2 s). Both phases run in the agent's PoP session, as over
 * HTTP (the context read and the accept check it). Figures: CPU of this process per phase 1 and per
 * phase 2 with its verdict (process.cpuUsage around each call; the agent's own quote is not
 * counted), over the second half of the run. Baseline in the same run: the evaluator alone on the
 * agent's first evidence (bench/_pushBaseline.ts). Seconds per change instead of push-fleet's
 * minutes, for finding where the path's CPU goes; push-fleet is the figure that counts.
 *
 *   npm run bench -- push-path [attestations=2000] [sqlite|pg]
 */
import { Clock, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { capabilitiesOf, collectEvidence, popProof } from "../src/push-agent/evidence.js"
import { Attestations } from "../src/verifier/push/Attestations.js"
import { PushDomainLive } from "../src/verifier/push/PushDomain.js"
import { Sessions } from "../src/verifier/push/Sessions.js"
import { testDatabase } from "../test/support/db.js"
import { enrol, policyOfMachine, SimAgent, simulatedAgent } from "../test/push/support.js"
import { verifierLayer } from "../test/verifier/support.js"
import { inProcessEvaluationMs } from "./_pushBaseline.js"

const N = Number(process.argv[2] ?? 2000)
const BACKEND = (process.argv[3] ?? "sqlite") as "sqlite" | "pg"
const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c0a0a0"

// the verifier's clock, moved by hand: each attestation comes one quote interval after the last
let now = Date.now()
const real = Clock.make()
const clock: Clock.Clock = {
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  sleep: (duration) => real.sleep(duration),
  unsafeCurrentTimeMillis: () => now,
  currentTimeMillis: Effect.sync(() => now),
  unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n)
}
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

const main = Effect.gen(function*() {
  const db = yield* testDatabase(BACKEND)
  const sim = yield* SimAgent
  // no token extension: a real agent's session is extended once per tenth of its lifetime, and this
  // one has no session, so every pass would write its token expiry
  // (and a session that outlives the run's 2.1 s x N)
  const domain = yield* Layer.build(PushDomainLive.pipe(Layer.provideMerge(verifierLayer(db, { quote_interval: 2, extend_token_on_attestation: false, session_lifetime: 10 * 365 * 86400 }))))
  yield* enrol(AGENT).pipe(Effect.provide(domain))
  const attestations = yield* Attestations.pipe(Effect.provide(domain))
  const sessions = yield* Sessions.pipe(Effect.provide(domain))
  const challenge = yield* sessions.create({ agentId: AGENT, methods: [{ authentication_class: "pop", authentication_type: "tpm_pop" }], clientAddress: "127.0.0.1" })
  const proved = yield* sessions.prove({ sessionId: challenge.session_id, agentId: AGENT, proof: yield* Effect.orDie(popProof(sim.tpm, sim.id, challenge.challenge)), clientAddress: "127.0.0.1" })
  if (proved._tag !== "Pass") return yield* Effect.dieMessage(`the bench agent's PoP failed: ${proved.detail}`)
  const sessionId = proved.session.session_id
  const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
  let phase1 = 0
  let phase2 = 0
  let passed = 0
  const measured = N - Math.floor(N / 2)
  for (let i = 0; i < N; i++) {
    now += 2100
    const c0 = cpuMs()
    const created = yield* attestations.create(AGENT, caps, sessionId)
    const c1 = cpuMs()
    const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, JSON.parse(created.evidence_requested)))
    const c2 = cpuMs()
    yield* attestations.submit(AGENT, created.idx, evidence, sessionId)
    yield* attestations.idle
    const c3 = cpuMs()
    if (i >= N - measured) {
      phase1 += c1 - c0
      phase2 += c3 - c2
    }
    if ((yield* attestations.show(AGENT, created.idx)).evaluation === "pass") passed++
  }
  if (passed !== N) return yield* Effect.dieMessage(`${N - passed} of ${N} attestations did not pass`)
  const list = Option.getOrThrow(yield* Effect.orDie(sim.source.imaList(0))).list
  const baseline = yield* inProcessEvaluationMs({ tpm: sim.tpm, ak: sim.id.ak, source: sim.source, policy: policyOfMachine(list) })
  const p1 = phase1 / measured
  const p2 = phase2 / measured
  console.log(`${N} push attestations of one agent on ${BACKEND} in this process (no HTTP), all passed; CPU over the last ${measured}:`)
  console.log(`phase 1 ${p1.toFixed(3)} ms, phase 2 with its verdict ${p2.toFixed(3)} ms, together ${(p1 + p2).toFixed(3)} ms`)
  console.log(`baseline evaluator alone (first evidence, whole IMA list): ${baseline.toFixed(3)} ms; push path / evaluation ${((p1 + p2) / baseline).toFixed(2)}`)
  console.log(`BENCH push_path_phase1_cpu_ms ${p1.toFixed(3)} ms`)
  console.log(`BENCH push_path_phase2_verdict_cpu_ms ${p2.toFixed(3)} ms`)
  console.log(`BENCH push_path_cpu_ms ${(p1 + p2).toFixed(3)} ms`)
  console.log(`BENCH push_path_to_evaluate_ratio ${((p1 + p2) / baseline).toFixed(2)}`)
}).pipe(
  Effect.provide(simulatedAgent("push-path")),
  Effect.scoped,
  Effect.withClock(clock),
  Logger.withMinimumLogLevel(LogLevel.Warning)
)

Effect.runPromise(main).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
