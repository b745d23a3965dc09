/**
 * PoP sessions under attack, on SQLite and PostgreSQL (issue 22 §2, §3). Another client creating
 * sessions in a push agent's name from its own address, beyond every limit, and answering them
 * with forged proofs, does not stop the genuine push agent (the real program, runPushAgent) from
 * getting its session and attesting: creations are limited per client address, failed proofs per
 * client address, tokens per agent (only its own proofs count). POST /v3/sessions stores nothing:
 * a huge or invalid agent id is refused with a clear error, an unknown or pull-model id gets a
 * challenge whose proof fails (as Keylime answers), and only a verified proof of an enrolled push
 * agent stores a session. A sweep of the push domain deletes expired sessions every minute.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Ref, TestClock } from "effect"
import * as https from "node:https"
import { join } from "node:path"
import { popProof } from "../../src/push-agent/evidence.js"
import { type PushAgentStats, runPushAgent } from "../../src/push-agent/PushAgent.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { SESSION_BODY_MAX_BYTES } from "../../src/verifier/http/v3/PushHttp.js"
import { PushDomainLive } from "../../src/verifier/push/PushDomain.js"
import { tempDir } from "../agent/support.js"
import { testDatabase } from "../support/db.js"
import { backends, validBody, verifierLayer } from "../verifier/support.js"
import { b64, enrol, enrolledPushAgent, proveSession, PushTestEnv, pushVerifier, SimAgent, simulatedAgent } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00022"
const POP = [{ authentication_class: "pop", authentication_type: "tpm_pop" }]
const createBody = (agentId: string) => ({ data: { type: "session", attributes: { agent_id: agentId, authentication_supported: POP } } })
const proofBody = (sessionId: string, agentId: string, data: { readonly message: string; readonly signature: string }) => ({
  data: { type: "session", id: sessionId, attributes: { agent_id: agentId, authentication_provided: [{ ...POP[0], data }] } }
})
const FORGED = { message: "AAAA", signature: "AAAA" }
const sessionRows = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ agent_id: string; active: number | boolean }>`SELECT agent_id, active FROM push_sessions ORDER BY active`).pipe(
  Effect.map((rows) => rows.map((r) => [r.agent_id, Boolean(r.active)])),
  Effect.orDie
)

describe.each(backends)("push sessions on %s", (backend, available) => {
  it.live.skipIf(!available)("the genuine push agent gets its session and attests while another client floods POST /v3/sessions in its name", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const dir = yield* tempDir("attest-push-lockout-")
      const options = yield* enrolledPushAgent(AGENT, join(dir, "agent"))

      // the attacker: another client (its own address), a session in the agent's name every 10 ms,
      // each answered with a forged proof, for as long as the agent runs
      const attacker = yield* Effect.acquireRelease(
        Effect.sync(() => new https.Agent({ keepAlive: true, maxSockets: 1, ca: env.ca, localAddress: "127.0.0.2" })),
        (a) => Effect.sync(() => a.destroy())
      )
      const seen = yield* Ref.make({ created: 0, createLimited: 0, forgedRefused: 0, proofsLimited: 0 })
      const flood = Effect.gen(function*() {
        const s = yield* env.request("POST", "/v3.0/sessions", { agent: attacker, body: createBody(AGENT) })
        if (s.status === 429) yield* Ref.update(seen, (c) => ({ ...c, createLimited: c.createLimited + 1 }))
        if (s.status === 200) {
          yield* Ref.update(seen, (c) => ({ ...c, created: c.created + 1 }))
          const p = yield* env.request("PATCH", `/v3.0/sessions/${s.json.data.id}`, { agent: attacker, body: proofBody(s.json.data.id, AGENT, FORGED) })
          if (p.status === 401) yield* Ref.update(seen, (c) => ({ ...c, forgedRefused: c.forgedRefused + 1 }))
          if (p.status === 429) yield* Ref.update(seen, (c) => ({ ...c, proofsLimited: c.proofsLimited + 1 }))
        }
        yield* Effect.sleep("10 millis")
      })
      const flooding = yield* Effect.fork(Effect.forever(flood))
      // past every limit (50 creations a minute from one address, Keylime's 15 per agent) before the agent starts
      const started = Date.now()
      while ((yield* Ref.get(seen)).createLimited === 0 && Date.now() - started < 60_000) yield* Effect.sleep("50 millis")

      const stats = yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 })
      const final = yield* runPushAgent({ ...options, cycles: 3 }, stats).pipe(
        Effect.provide(NodeHttpClient.layerUndici),
        // locked out, the agent would wait Retry-After (60 s) again and again
        Effect.timeoutFail({ duration: "90 seconds", onTimeout: () => new Error("the push agent did not finish its 3 cycles within 90 s") })
      )
      yield* Fiber.interrupt(flooding)
      const attack = yield* Ref.get(seen)
      expect([final.accepted, final.refused, final.sessions]).toEqual([3, 0, 1])
      // the attacker went past its limits: its creations refused (429), its forged proofs refused, then limited
      expect([attack.created >= 50, attack.createLimited > 0, attack.forgedRefused >= 50, attack.forgedRefused + attack.proofsLimited]).toEqual([true, true, true, attack.created])
      // stored: the agent's own session, nothing of the attacker's
      expect(yield* sessionRows).toEqual([[AGENT, true]])
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("push-lockout")))), 180_000)

  it.live.skipIf(!available)("POST /v3/sessions stores nothing: huge and invalid ids refused, unknown and pull-model ids fail their proof", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const sim = yield* SimAgent
      const post = (agentId: string) => env.request("POST", "/v3.0/sessions", { body: createBody(agentId) })
      const detail = (r: { readonly status: number; readonly json: any }) => [r.status, r.json?.errors?.[0]?.detail]

      // a huge id is not parsed (a session document is small); a long or odd id is refused naming the rule
      expect(detail(yield* post("x".repeat(100 * 1024)))).toEqual([413, `Request body exceeds the limit of ${SESSION_BODY_MAX_BYTES} bytes`])
      const rule = "agent_id not valid: an agent id must be 1-255 characters of letters, digits, '-', '_' or '.'"
      expect(detail(yield* post("a".repeat(256)))).toEqual([400, rule])
      expect(detail(yield* post("bad id!"))).toEqual([400, rule])
      expect(detail(yield* post(""))).toEqual([400, "agent_id is required"])
      expect(detail(yield* env.request("PATCH", "/v3.0/sessions/x", { body: proofBody("x", "a".repeat(300), FORGED) }))).toEqual([400, rule])

      // an unknown id: a challenge, as Keylime answers; its proof fails (200, evaluation fail)
      const unknown = yield* post("d432fbb3-d2f1-4a97-9ef7-75bd81c0ffff")
      expect([unknown.status, Buffer.from(unknown.json.data.attributes.authentication_requested[0].chosen_parameters.challenge, "base64").length]).toEqual([200, 16])
      const unknownProof = yield* env.request("PATCH", `/v3.0/sessions/${unknown.json.data.id}`, { body: proofBody(unknown.json.data.id, "d432fbb3-d2f1-4a97-9ef7-75bd81c0ffff", FORGED) })
      expect([unknownProof.status, unknownProof.json.data.attributes.evaluation, unknownProof.json.data.attributes.token]).toEqual([200, "fail", undefined])

      // a pull-model agent with this very AK: its genuine proof gets no token
      yield* Effect.orDie((yield* Agents).add("pull-agent", { ...validBody(), ak_tpm: b64(sim.id.ak.public), accept_tpm_hash_algs: ["sha256"], accept_tpm_signing_algs: ["rsassa"] }))
      const pull = yield* post("pull-agent")
      const genuine = yield* Effect.orDie(popProof(sim.tpm, sim.id, pull.json.data.attributes.authentication_requested[0].chosen_parameters.challenge))
      const pullProof = yield* env.request("PATCH", `/v3.0/sessions/${pull.json.data.id}`, { body: proofBody(pull.json.data.id, "pull-agent", genuine) })
      expect([pullProof.status, pullProof.json.data.attributes.evaluation, pullProof.json.data.attributes.token]).toEqual([200, "fail", undefined])
      // an id this verifier did not make names no session
      expect(detail(yield* env.request("PATCH", "/v3.0/sessions/00000000-0000-4000-8000-000000000000", { body: proofBody("x", "pull-agent", genuine) }))).toEqual([404, "Session not found"])
      expect(yield* sessionRows).toEqual([])

      // an enrolled push agent's proof stores its session, once: the same proof again is refused
      yield* enrol(AGENT)
      const mine = yield* post(AGENT)
      const proof = yield* Effect.orDie(popProof(sim.tpm, sim.id, mine.json.data.attributes.authentication_requested[0].chosen_parameters.challenge))
      const proved = yield* env.request("PATCH", `/v3.0/sessions/${mine.json.data.id}`, { body: proofBody(mine.json.data.id, AGENT, proof) })
      expect([proved.status, proved.json.data.attributes.evaluation, typeof proved.json.data.attributes.token]).toEqual([200, "pass", "string"])
      const replayed = yield* env.request("PATCH", `/v3.0/sessions/${mine.json.data.id}`, { body: proofBody(mine.json.data.id, AGENT, proof) })
      expect(detail(replayed)).toEqual([400, "Session already authenticated: extend it with its token"])
      // a proof of a session asked for another agent id does not authenticate this one
      const other = yield* post("d432fbb3-d2f1-4a97-9ef7-75bd81c0eeee")
      const misused = yield* env.request("PATCH", `/v3.0/sessions/${other.json.data.id}`, {
        body: proofBody(other.json.data.id, AGENT, yield* Effect.orDie(popProof(sim.tpm, sim.id, other.json.data.attributes.authentication_requested[0].chosen_parameters.challenge)))
      })
      expect([misused.status, misused.json.data.attributes.evaluation]).toEqual([401, "fail"])
      expect(yield* sessionRows).toEqual([[AGENT, true]])
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("push-session-ids")))), 120_000)

  it.scoped.skipIf(!available)("every minute the sweep deletes sessions whose challenge and token expired (TestClock)", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        yield* enrol(AGENT)
        const prove = proveSession(AGENT)
        // two tokens at 0 s, the first replaced by the second; both expire at 180 s
        expect([(yield* prove)._tag, (yield* prove)._tag]).toEqual(["Pass", "Pass"])
        expect(yield* sessionRows).toEqual([[AGENT, false], [AGENT, true]])
        // the sweeps at 60, 120 and 180 s find nothing expired (at 180 s the tokens just expire)
        yield* TestClock.adjust(Duration.seconds(239))
        yield* Effect.repeatN(Effect.yieldNow(), 50)
        expect((yield* sessionRows).length).toEqual(2)
        // the sweep at 240 s deletes both
        yield* TestClock.adjust(Duration.seconds(1))
        yield* Effect.repeatN(Effect.yieldNow(), 50)
        expect(yield* sessionRows).toEqual([])
      }).pipe(Effect.provide(PushDomainLive.pipe(Layer.provideMerge(verifierLayer(db, { session_lifetime: 180 })))), Effect.scoped)
    }).pipe(Effect.provide(simulatedAgent("push-sweep"))), 60_000)
})
