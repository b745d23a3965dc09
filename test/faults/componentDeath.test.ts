/**
 * kill -9 of the registrar, a pull agent and a push agent: `attest registrar`, `attest agent` and
 * `attest push-agent` as real processes (simulated TPMs kept in their data directories) beside a
 * real `attest verifier`, killed at points a seeded random source chooses (a failure names its
 * seed; ATTEST_FAULT_SEED=<seed> replays the choices, ATTEST_FAULT_ROUNDS=<n> runs more rounds).
 *
 * - The registrar dies while newcomers register and activate and a tenant reads a record: the
 *   table it leaves holds only whole rows (each agent's own EK and AK, the rows of agents
 *   registered before unchanged; SQLite's integrity check ok); after its restart every interrupted
 *   exchange completes, the records are the same, a new agent registers and one re-registers with
 *   its identity. SQLite and PostgreSQL; on SQLite the verifier attests the agent processes on
 *   without it (pull GET_QUOTE, push PASS throughout).
 * - The pull agent dies at a random point of its cycle: GET_QUOTE_RETRY (4) until it is back, then
 *   GET_QUOTE (3), never FAILED within the retry budget. A restarted simulator is a rebooted
 *   machine (TPM reset, new boot time, its IMA list from entry 0): the verifier says so once and
 *   judges the new list from its start (architecture.md, "A reboot asks again at once from entry 0").
 * - The push agent dies at a random point of its cycle and is restarted: a new PoP session,
 *   attesting again; back within the deadline (quote_interval * 5 from its last verdict): only
 *   PASS. Dead longer: TIMEOUT once, never before the deadline, and PASS again when it attests after
 *   its restart (a push agent whose acceptance ended may attest again, without reactivation).
 * The agents' rounds run on SQLite only: what they test is the processes, not the database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Fiber } from "effect"
import { join } from "node:path"
import { makeTestCa, tempDir } from "../agent/support.js"
import { type TestBackend, testDatabase } from "../support/db.js"
import { freePort } from "../support/swtpm.js"
import { waitFor as waitUntil } from "../verifier/pollerSupport.js"
import { backends } from "../verifier/support.js"
import {
  activeRecord,
  newcomer,
  PUSH_AGENT_READY,
  pullAgentReady,
  pullEnrolment,
  pushEnrolment,
  type RegistrarRecord,
  registrarRecord,
  registrarTable,
  REGISTRAR_READY,
  startComponent,
  VERIFIER_READY,
  writePullAgentConfig,
  writePushAgentConfig,
  writeRegistrarConfig
} from "./components.js"
import { agentStatus, faultRounds, faultSeed, seededRandom, verifierAdmin, writeVerifierConfig } from "./support.js"

const QUOTE_INTERVAL = 2
const ROUNDS = faultRounds(2)
const NEWCOMERS = 3
const PULL = "d432fbb3-d2f1-4a97-9ef7-75bd81c0de01"
const PUSH = "d432fbb3-d2f1-4a97-9ef7-75bd81c0de02"
/** How late a sample may see a change (every 200 ms, and the request's time on a loaded machine). */
const SAMPLE_SLACK_MS = 2_000
const STATE = { GET_QUOTE: 3, GET_QUOTE_RETRY: 4, FAILED: 7 } as const
const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))
const count = (lines: ReadonlyArray<{ readonly text: string }>, pattern: RegExp) => lines.filter((l) => pattern.test(l.text)).length
/** Consecutive repeats dropped: the states a sequence went through. */
const path = <A>(xs: ReadonlyArray<A>) => xs.filter((x, i) => i === 0 || x !== xs[i - 1])

type Status = { readonly operational_state: number; readonly attestation_count: number; readonly attestation_status?: string }
interface Sample {
  readonly at: number
  readonly pull: Status
  readonly push: Status
}

/** The registrar as a process on `backend`, TLS and admins from a fresh test CA. */
const startRegistrar = (backend: TestBackend) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-component-death-")
    const ca = yield* makeTestCa(join(dir, "cv_ca"))
    const registrarDb = yield* testDatabase(backend)
    const registrarPort = yield* Effect.promise(freePort)
    const registrarTlsPort = yield* Effect.promise(freePort)
    const args = ["registrar", "--config", writeRegistrarConfig(dir, { ca, db: registrarDb, port: registrarPort, tlsPort: registrarTlsPort })]
    const running = { registrar: yield* startComponent(args, REGISTRAR_READY) }
    return { dir, ca, registrarDb, registrarPort, registrarTlsPort, args, running }
  })
type Registrar = Effect.Effect.Success<ReturnType<typeof startRegistrar>>

/**
 * Beside the registrar: the verifier, a pull agent and a push agent as processes, both enrolled
 * from their registrar records, attesting; both agents' statuses sampled every 200 ms to the end.
 */
const startAgents = (registrar: Registrar, backend: TestBackend) =>
  Effect.gen(function*() {
    const { ca, dir, registrarPort, registrarTlsPort } = registrar
    const verifierDb = yield* testDatabase(backend)
    const verifierPort = yield* Effect.promise(freePort)
    const pullPort = yield* Effect.promise(freePort)
    const verifierUrl = `https://127.0.0.1:${verifierPort}`
    const args = {
      verifier: ["verifier", "--config", writeVerifierConfig(dir, {
        caDir: ca.dir,
        db: verifierDb,
        port: verifierPort,
        quoteInterval: QUOTE_INTERVAL,
        // a fixed 1 s between retries, 60 of them: an agent back within a minute is never FAILED
        extra: ["retry_interval = 1", "exponential_backoff = false", "max_retries = 60", "request_timeout = 10"]
      })],
      pull: ["agent", "--config", writePullAgentConfig(dir, { id: PULL, ca, port: pullPort, registrarPort }), "--tpm", "simulator"],
      push: ["push-agent", "--config", writePushAgentConfig(dir, { id: PUSH, ca, registrarPort, verifierUrl, interval: QUOTE_INTERVAL }), "--tpm", "simulator"]
    }
    const [verifier, pull, push] = yield* Effect.all([
      startComponent(args.verifier, VERIFIER_READY),
      startComponent(args.pull, pullAgentReady(PULL)),
      Effect.tap(startComponent(args.push, PUSH_AGENT_READY), (c) => Effect.promise(() => c.run.waitFor(/activated with registrar/, 120_000)))
    ], { concurrency: "unbounded" })
    const running = { verifier, pull, push }

    // the tenant: each agent's record from the registrar, enrolled at the verifier
    const enrolled = new Map<string, RegistrarRecord>()
    for (const [id, body] of [[PULL, pullEnrolment], [PUSH, pushEnrolment]] as const) {
      const record = yield* activeRecord(ca, registrarTlsPort, id)
      enrolled.set(id, record)
      const added = yield* verifierAdmin(ca)(verifierUrl, "POST", `/v2.6/agents/${id}`, body(record))
      expect({ agent: id, status: added.status, body: added.status === 200 ? "" : added.body }).toEqual({ agent: id, status: 200, body: "" })
    }

    const samples: Array<Sample> = []
    const status = (id: string) => agentStatus(verifierAdmin(ca), verifierUrl, id)
    const sampler = yield* Effect.fork(Effect.forever(Effect.zipRight(
      Effect.exit(Effect.timeout(Effect.all([status(PULL), status(PUSH)], { concurrency: 2 }), "5 seconds")).pipe(
        Effect.tap((e) => Exit.isSuccess(e) ? Effect.sync(() => void samples.push({ at: Date.now(), pull: e.value[0], push: e.value[1] })) : Effect.void)
      ),
      sleep(200)
    )))
    yield* Effect.addFinalizer(() => Fiber.interrupt(sampler))
    const latest = Effect.sync(() => samples[samples.length - 1])
    /** The latest sample of one agent once `ok` holds for it (120 s at most; the message names `what`). */
    const waitFor = (what: string, id: "pull" | "push", ok: (s: Status) => boolean) =>
      Effect.map(waitUntil(what, latest, (s) => s !== undefined && ok(s[id]), 120_000), (s) => s![id])
    /** When one agent's attestation count was seen rising (its verdicts, sampled). */
    const verdictTimes = (id: "pull" | "push") => samples.filter((x, i) => i > 0 && x[id].attestation_count > samples[i - 1]![id].attestation_count).map((x) => x.at)
    /** The values of one field of one agent sampled since `from`. */
    const since = <K extends keyof Status>(from: number, id: "pull" | "push", key: K) => samples.filter((s) => s.at >= from).map((s) => s[id][key])

    yield* waitFor("the pull agent attested", "pull", (s) => s.attestation_count >= 1)
    yield* waitFor("the push agent attested", "push", (s) => s.attestation_count >= 1 && s.attestation_status === "PASS")
    return { args, running, enrolled, waitFor, since, samples, verdictTimes }
  })
type Agents = Effect.Effect.Success<ReturnType<typeof startAgents>>

/**
 * Registrar rounds: it dies among newcomers' registrations and a tenant's reads. Nothing
 * half-written, nothing lost; with `agents`, the verifier attests them on meanwhile.
 */
const registrarRounds = (fleet: Registrar, seed: number, agents?: Agents) =>
  Effect.gen(function*() {
    const random = seededRandom(seed)
    const { ca, registrarTlsPort } = fleet
    // agents registered before the rounds: the agent processes, or (no agents) one newcomer
    const enrolled = new Map<string, RegistrarRecord>(agents?.enrolled ?? [])
    const identities = new Map<string, { readonly ek: string; readonly ak: string }>()
    if (agents === undefined) {
      const first = yield* newcomer("registered-before", fleet.dir, fleet.registrarPort)
      yield* Effect.orDie(first.register)
      enrolled.set(first.id, yield* activeRecord(ca, registrarTlsPort, first.id))
    }
    for (const [id, r] of enrolled) identities.set(id, { ek: r.ek_tpm, ak: r.aik_tpm })
    const [watched] = [...enrolled.keys()] as [string]
    for (let round = 1; round <= ROUNDS; round++) {
      const tag = { seed, round }
      const from = Date.now()
      const fresh = yield* Effect.forEach(Array.from({ length: NEWCOMERS }, (_, i) => `newcomer-${round}-${i + 1}`), (id) => newcomer(id, fleet.dir, fleet.registrarPort))
      for (const n of fresh) identities.set(n.id, { ek: n.ek, ak: n.ak })

      // a tenant reads a record throughout: the record as registered, or no answer
      const tenantSaw = new Set<string>()
      const tenant = yield* Effect.fork(Effect.forever(Effect.zipRight(
        Effect.tap(registrarRecord(ca, registrarTlsPort, watched), (a) =>
          Effect.sync(() =>
            tenantSaw.add(
              Either.isLeft(a)
                ? "no answer"
                : a.right.record === undefined
                ? `status ${a.right.status}`
                : JSON.stringify(a.right.record) === JSON.stringify(enrolled.get(watched))
                ? "the record"
                : `another record: ${JSON.stringify(a.right.record)}`
            )
          )),
        sleep(50)
      )))
      // newcomers register (and activate) at staggered moments; the registrar dies after the k-th of
      // their 2 * NEWCOMERS steps it logged (k from 0: before any), a few milliseconds later
      const killed = fleet.running.registrar.run
      const k = Math.floor(random() * 2 * NEWCOMERS)
      const jitterMs = random() * 15
      const steps = new RegExp(`Agent newcomer-${round}-\\d+ (registered|activated)`)
      const killAfterStep = () => {
        if (killed.child.exitCode === null && count(killed.lines, steps) >= k) setTimeout(() => killed.child.kill("SIGKILL"), jitterMs)
      }
      killed.child.stdout!.on("data", killAfterStep)
      killAfterStep()
      const registering = yield* Effect.forEach(fresh, (n) => Effect.fork(Effect.zipRight(sleep(random() * 200), n.register)))
      const exit = yield* Effect.promise(() => Promise.race([killed.exited, new Promise<string>((r) => setTimeout(() => r("still running after 60 s"), 60_000))]))
      expect({ ...tag, k, exit }).toEqual({ ...tag, k, exit: null })

      if (agents !== undefined) {
        // the verifier attests on without the registrar
        const atKill = { pull: (yield* agents.waitFor("a sample", "pull", () => true)).attestation_count, push: (yield* agents.waitFor("a sample", "push", () => true)).attestation_count }
        yield* agents.waitFor(`the pull agent attested with the registrar down (seed ${seed}, round ${round})`, "pull", (s) => s.attestation_count > atKill.pull)
        yield* agents.waitFor(`the push agent attested with the registrar down (seed ${seed}, round ${round})`, "push", (s) => s.attestation_count > atKill.push)
      }

      // what the killed registrar left: whole rows only
      const table = yield* registrarTable(fleet.registrarDb)
      expect({ ...tag, integrity: table.integrity }).toEqual({ ...tag, integrity: "ok" })
      for (const row of table.rows) {
        const own = identities.get(row.agent_id)
        const whole = { known: own !== undefined, ownEk: row.ek_tpm === own?.ek, ownAk: row.aik_tpm === own?.ak, challenge: row.challenge_key !== "", regcount: row.regcount >= 1 }
        expect({ ...tag, agent: row.agent_id, ...whole }).toEqual({ ...tag, agent: row.agent_id, known: true, ownEk: true, ownAk: true, challenge: true, regcount: true })
      }
      for (const [id, r] of enrolled) {
        const row = table.rows.find((x) => x.agent_id === id)
        const kept = row && { agent_id: row.agent_id, ek_tpm: row.ek_tpm, aik_tpm: row.aik_tpm, ip: row.ip, port: row.port, mtls_cert: row.mtls_cert, regcount: row.regcount, active: row.active }
        expect({ ...tag, row: kept }).toEqual({ ...tag, row: { ...r, active: 1 } })
      }

      fleet.running.registrar = yield* startComponent(fleet.args, REGISTRAR_READY)
      // every interrupted exchange completes by the agents' own retries; each record is the agent's own
      for (const [i, f] of registering.entries()) {
        const done = yield* Effect.either(Effect.timeoutFail(Fiber.join(f), { duration: "60 seconds", onTimeout: () => new Error("still registering after 60 s") }))
        expect({ ...tag, agent: fresh[i]!.id, registered: Either.isRight(done) ? true : String(done.left) }).toEqual({ ...tag, agent: fresh[i]!.id, registered: true })
      }
      yield* Fiber.interrupt(tenant)
      for (const n of fresh) {
        const r = yield* activeRecord(ca, registrarTlsPort, n.id)
        expect({ ...tag, agent: n.id, ek: r.ek_tpm, ak: r.aik_tpm }).toEqual({ ...tag, agent: n.id, ek: n.ek, ak: n.ak })
      }
      for (const [id, r] of enrolled) expect({ ...tag, record: yield* activeRecord(ca, registrarTlsPort, id) }).toEqual({ ...tag, record: r })
      const tenantOk = [...tenantSaw].every((s) => s === "the record" || s === "no answer")
      expect({ ...tag, tenantSaw: tenantOk ? "the record or no answer" : [...tenantSaw] }).toEqual({ ...tag, tenantSaw: "the record or no answer" })

      // a new agent registers; an agent registers again with its identity (its record's regcount rises)
      const late = yield* newcomer(`newcomer-${round}-late`, fleet.dir, fleet.registrarPort)
      identities.set(late.id, { ek: late.ek, ak: late.ak })
      yield* Effect.orDie(late.register)
      expect({ ...tag, ak: (yield* activeRecord(ca, registrarTlsPort, late.id)).aik_tpm }).toEqual({ ...tag, ak: late.ak })
      const before = (yield* activeRecord(ca, registrarTlsPort, fresh[0]!.id)).regcount
      yield* Effect.orDie(fresh[0]!.register)
      expect({ ...tag, regcount: (yield* activeRecord(ca, registrarTlsPort, fresh[0]!.id)).regcount }).toEqual({ ...tag, regcount: before + 1 })

      if (agents !== undefined) {
        // the verifier's attestation of the enrolled agents was not touched
        expect({ ...tag, pull: [...new Set(agents.since(from, "pull", "operational_state"))] }).toEqual({ ...tag, pull: [STATE.GET_QUOTE] })
        expect({ ...tag, push: [...new Set(agents.since(from, "push", "attestation_status"))] }).toEqual({ ...tag, push: ["PASS"] })
      }
    }
  })

/** Pull agent rounds: killed at a random point of its cycle, restarted after a random pause. */
const pullRounds = (fleet: Agents, seed: number) =>
  Effect.gen(function*() {
    const random = seededRandom(seed + 1)
    const reboots = new RegExp(`agent ${PULL}: agent rebooted: asking again for its measurement list from entry 0`)
    for (let round = 1; round <= ROUNDS; round++) {
      const tag = { seed, agent: "pull", round }
      const from = Date.now()
      yield* sleep(random() * QUOTE_INTERVAL * 1000)
      const killed = fleet.running.pull.run
      killed.child.kill("SIGKILL")
      expect({ ...tag, exit: yield* Effect.promise(() => killed.exited) }).toEqual({ ...tag, exit: null })
      const retrying = yield* fleet.waitFor(`GET_QUOTE_RETRY after kill ${round} (seed ${seed})`, "pull", (s) => s.operational_state === STATE.GET_QUOTE_RETRY)
      yield* sleep(random() * 1000)
      fleet.running.pull = yield* startComponent(fleet.args.pull, pullAgentReady(PULL))
      yield* fleet.waitFor(
        `GET_QUOTE and a new verdict after restart ${round} (seed ${seed})`,
        "pull",
        (s) => s.operational_state === STATE.GET_QUOTE && s.attestation_count > retrying.attestation_count
      )
      // a restarted simulator is a rebooted machine: said once per restart, its new list judged from entry 0
      expect({ ...tag, reboots: count(fleet.running.verifier.run.lines, reboots) }).toEqual({ ...tag, reboots: round })
      expect({ ...tag, states: [...new Set(fleet.since(from, "pull", "operational_state"))].sort() }).toEqual({ ...tag, states: [STATE.GET_QUOTE, STATE.GET_QUOTE_RETRY] })
    }
  })

/**
 * Push agent rounds: killed at a random point of its cycle, restarted after a random pause; then dead
 * past its deadline. The deadline runs from its last verdict (sampled: up to SAMPLE_SLACK_MS late).
 * Back before it: only PASS. Past it (the last round, or a machine so loaded that a restart takes
 * longer): TIMEOUT, never earlier than the deadline, and PASS again once it attests.
 */
const pushRounds = (fleet: Agents, seed: number) =>
  Effect.gen(function*() {
    const random = seededRandom(seed + 2)
    const verifierLines = () => fleet.running.verifier.run.lines
    const sessions = new RegExp(`PoP session of agent ${PUSH} authenticated`)
    /** Restarted: a new PoP session, then a new verdict; when its last verdict before and that one were sampled. */
    const restart = (tag: Record<string, unknown>) =>
      Effect.gen(function*() {
        const sessionsBefore = count(verifierLines(), sessions)
        fleet.running.push = yield* startComponent(fleet.args.push, PUSH_AGENT_READY)
        yield* Effect.promise(() => fleet.running.push.run.waitFor(/PoP session authenticated: bearer token obtained/, 120_000))
        const provedAt = Date.now()
        const c = (yield* fleet.waitFor("a sample", "push", () => true)).attestation_count
        yield* fleet.waitFor(`the push agent attesting after its restart (${JSON.stringify(tag)})`, "push", (s) => s.attestation_count > c && s.attestation_status === "PASS")
        expect({ ...tag, newSession: count(verifierLines(), sessions) > sessionsBefore }).toEqual({ ...tag, newSession: true })
        const verdicts = fleet.verdictTimes("push")
        const back = verdicts.find((t) => t > provedAt)!
        return { back, lastBefore: Math.max(...verdicts.filter((t) => t < back)) }
      })
    const kill = (tag: Record<string, unknown>) =>
      Effect.gen(function*() {
        const killed = fleet.running.push.run
        killed.child.kill("SIGKILL")
        expect({ ...tag, exit: yield* Effect.promise(() => killed.exited) }).toEqual({ ...tag, exit: null })
      })
    /** The statuses sampled from `from` to `to`, and when TIMEOUT was seen first. */
    const seen = (from: number, to: number) => {
      const window = fleet.samples.filter((x) => x.at >= from && x.at <= to)
      return { path: path(window.map((x) => x.push.attestation_status)), timeoutAt: window.find((x) => x.push.attestation_status === "TIMEOUT")?.at }
    }
    const deadlineMs = QUOTE_INTERVAL * 5 * 1000

    for (let round = 1; round <= ROUNDS; round++) {
      const tag = { seed, agent: "push", round }
      const from = Date.now()
      // anywhere in its cycle: before, while or after it posts evidence
      yield* sleep(random() * QUOTE_INTERVAL * 1000)
      yield* kill(tag)
      yield* sleep(random() * 1000)
      const { back, lastBefore } = yield* restart(tag)
      const { path: statuses, timeoutAt } = seen(from, back)
      if (back - lastBefore < deadlineMs - SAMPLE_SLACK_MS) expect({ ...tag, backAfterMs: back - lastBefore, statuses }).toEqual({ ...tag, backAfterMs: back - lastBefore, statuses: ["PASS"] })
      else expect({ ...tag, timedOutEarly: timeoutAt !== undefined && timeoutAt < lastBefore + deadlineMs - SAMPLE_SLACK_MS }).toEqual({ ...tag, timedOutEarly: false })
    }

    // dead for longer than quote_interval * 5: TIMEOUT once; PASS again when it attests after its restart
    const tag = { seed, agent: "push", round: "past the deadline" }
    const from = Date.now()
    const timeouts = new RegExp(`Agent ${PUSH} has timed out`)
    const timedOutBefore = count(verifierLines(), timeouts)
    yield* kill(tag)
    yield* fleet.waitFor(`TIMEOUT (seed ${seed})`, "push", (s) => s.attestation_status === "TIMEOUT")
    yield* sleep(random() * 1000)
    const { back, lastBefore } = yield* restart(tag)
    const { path: statuses, timeoutAt } = seen(from, back)
    expect({ ...tag, statuses, timedOut: count(verifierLines(), timeouts) - timedOutBefore, early: timeoutAt! < lastBefore + deadlineMs - SAMPLE_SLACK_MS })
      .toEqual({ ...tag, statuses: ["PASS", "TIMEOUT", "PASS"], timedOut: 1, early: false })
  })

// the two backends at once: the PostgreSQL test (the registrar alone) runs beside the SQLite one
describe.concurrent("registrar, pull agent and push agent killed with SIGKILL", () => {
  for (const [backend, available] of backends) {
    it.live.skipIf(!available)(
      backend === "sqlite"
        ? "on sqlite: the registrar keeps whole records and registers again while the verifier attests on; a pull agent returns to GET_QUOTE; a push agent stays PASS within its deadline and recovers from TIMEOUT"
        : "on pg: the registrar keeps whole records and every interrupted registration completes",
      () =>
        Effect.gen(function*() {
          const seed = faultSeed()
          const registrar = yield* startRegistrar(backend)
          // the agents' deaths test processes, not the database: on SQLite only, where the registrar's
          // rounds also show the verifier attesting on without it
          const agents = backend === "sqlite" ? yield* startAgents(registrar, backend) : undefined
          yield* registrarRounds(registrar, seed, agents)
          if (agents !== undefined) {
            yield* Effect.all([pullRounds(agents, seed), pushRounds(agents, seed)], { concurrency: 2 })
            expect({ seed, failed: agents.samples.some((s) => s.pull.operational_state === STATE.FAILED) }).toEqual({ seed, failed: false })
          }
          for (const [name, c] of Object.entries({ ...registrar.running, ...agents?.running })) {
            expect({ seed, component: name, exit: yield* Effect.promise(() => c.run.stop()) }).toEqual({ seed, component: name, exit: 0 })
          }
        }).pipe(Effect.scoped),
      600_000
    )
  }
})
