/**
 * A PoP token is bound to the enrolment it was issued for (issue 22 §4), on SQLite and PostgreSQL.
 * An administrator's stop, reactivation, delete and enrolment again (another machine's AK) each
 * end every token of the agent at once: 401 saying why, and nothing created with it (the new
 * enrolment gets no attestation from the old token's holder). A stopped push agent's phase 1 is
 * refused 403 agent_stopped. The same holds across two verifier processes sharing the database,
 * whatever the agent's process cached: the attestation path reads the session with its context.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { capabilitiesOf, collectEvidence } from "../../src/push-agent/evidence.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { EndedText } from "../../src/verifier/http/v3/auth.js"
import { testDatabase } from "../support/db.js"
import { backends, validBody } from "../verifier/support.js"
import { attestOnce, b64, enrol, openSession, PushTestEnv, pushVerifier, pushVerifierOn, SimAgent, simulatedAgent, verdict } from "./support.js"

const A = "d432fbb3-d2f1-4a97-9ef7-75bd81c000b1"
const admin = { admin: true } as const
const detail = (r: { readonly status: number; readonly json: any } | undefined) => [r?.status, r?.json?.errors?.[0]?.detail]
const STOPPED = `Agent '${A}' was stopped by an administrator: attestations are refused until it is reactivated.`

/** Phase 1 with the agent's real capabilities (after the quote interval of its last attestation): the 201's Location. */
const phaseOne = (token: string) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const sim = yield* SimAgent
    yield* Effect.sleep("1100 millis")
    const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
    const created = yield* env.request("POST", `/v3.0/agents/${A}/attestations`, {
      token,
      body: { data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported, system_info: { boot_time: caps.bootTime } } } }
    })
    expect(created.status).toEqual(201)
    return { location: created.headers["location"]!, requested: created.json.data.attributes.evidence_requested }
  })

/** Phase 2 of what phase 1 asked for. */
const phaseTwo = (token: string, begun: { readonly location: string; readonly requested: any }) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const sim = yield* SimAgent
    const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, begun.requested))
    return yield* env.request("PATCH", begun.location, { token, body: { data: { type: "attestation", attributes: { evidence_collected: evidence } } } })
  })

/** The agent enrolled again under its id with another AK (another machine). */
const enrolOtherMachine = Effect.gen(function*() {
  const sim = yield* SimAgent
  const otherAk = yield* Effect.orDie(sim.tpm.createAk("rsa", { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" }))
  return { ...validBody(), ak_tpm: b64(otherAk.public), accept_tpm_hash_algs: ["sha256"], accept_tpm_signing_algs: ["rsassa"], attestation_model: "push" }
})

describe.each(backends)("push tokens bound to their enrolment on %s", (backend, available) => {
  it.live.skipIf(!available)("stop, reactivate, delete and enrolment again end every token: 401 saying why, nothing created", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      yield* enrol(A)
      const first = (yield* openSession(A)).token!
      const firstAttestation = yield* attestOnce(A, first)
      expect([firstAttestation.created.status, firstAttestation.created.json?.errors, firstAttestation.submitted?.status]).toEqual([201, undefined, 202])
      yield* verdict(A)

      // stopped: the token ends; a new session is granted, but phase 1 is refused 403 agent_stopped
      expect((yield* env.request("PUT", `/v3.0/agents/${A}/stop`, admin)).status).toEqual(204)
      expect(detail((yield* attestOnce(A, first)).created)).toEqual([401, EndedText.stopped])
      expect(detail(yield* env.request("GET", `/v3.0/agents/${A}`, { token: first }))).toEqual([401, EndedText.stopped])
      const whileStopped = (yield* openSession(A)).token!
      const refused = (yield* attestOnce(A, whileStopped)).created
      expect([refused.status, refused.json.errors]).toEqual([403, [{ status: "403", code: "agent_stopped", detail: STOPPED }]])

      // reactivated: the token of before ends; a new one attests
      expect((yield* env.request("PUT", `/v3.0/agents/${A}/reactivate`, admin)).status).toEqual(204)
      expect(detail((yield* attestOnce(A, whileStopped)).created)).toEqual([401, EndedText.reactivated])
      const afterReactivation = (yield* openSession(A)).token!
      yield* Effect.sleep("1100 millis") // quote_interval (1 s) after the first attestation
      const second = yield* attestOnce(A, afterReactivation)
      expect([second.created.status, second.created.json?.errors, second.submitted?.status]).toEqual([201, undefined, 202])
      yield* verdict(A)
      const attested = yield* env.request("GET", `/v3.0/agents/${A}/attestations`, admin)
      expect(attested.json.data.length).toEqual(2)

      // a phase 1 begun, then the agent deleted: its phase 2 and any new phase 1 are refused
      const begun = yield* phaseOne(afterReactivation)
      expect((yield* env.request("DELETE", `/v3.0/agents/${A}`, admin)).status).toEqual(204)
      expect(detail(yield* phaseTwo(afterReactivation, begun))).toEqual([401, EndedText.deleted])
      expect(detail((yield* attestOnce(A, afterReactivation)).created)).toEqual([401, EndedText.deleted])

      // enrolled again with another machine's AK: the old token's holder creates nothing on it
      yield* Effect.orDie((yield* Agents).add(A, yield* enrolOtherMachine))
      expect(detail((yield* attestOnce(A, afterReactivation)).created)).toEqual([401, EndedText.deleted])
      expect((yield* env.request("GET", `/v3.0/agents/${A}/attestations`, admin)).json.data).toEqual([])
      // and the AK it proved with authenticates nothing of the new enrolment
      const s = yield* openSession(A)
      expect([s.proved.status, s.proved.json.data.attributes.evaluation, s.token]).toEqual([401, "fail", undefined])
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("push-token-binding")))), 180_000)

  it.live.skipIf(!available)("across two verifier processes on one database: an end by one refuses the token the other cached", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      // the agent's verifier process (this test's PushTestEnv) and the admin's, on the same database
      const agentSide = yield* Layer.build(pushVerifierOn(db))
      const adminSide = yield* Layer.build(pushVerifierOn(db))
      const onAgentSide = <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.provide(e, agentSide)
      const adminEnv = Context.get(adminSide, PushTestEnv)
      const adminAgents = Context.get(adminSide, Agents)
      yield* onAgentSide(enrol(A))

      // the token checked by the agent's process moments ago (its cache trusts it for 10 s)
      const token = (yield* onAgentSide(openSession(A))).token!
      expect((yield* onAgentSide(attestOnce(A, token))).submitted?.status).toEqual(202)
      yield* onAgentSide(verdict(A))

      // stopped by the other process: phase 1 in the agent's process is refused at once
      expect((yield* adminEnv.request("PUT", `/v3.0/agents/${A}/stop`, admin)).status).toEqual(204)
      expect(detail((yield* onAgentSide(attestOnce(A, token))).created)).toEqual([401, EndedText.stopped])

      // reactivated there, a new token here, its phase 1 here (handed to its phase 2 in this
      // process); deleted there before its phase 2
      expect((yield* adminEnv.request("PUT", `/v3.0/agents/${A}/reactivate`, admin)).status).toEqual(204)
      const next = (yield* onAgentSide(openSession(A))).token!
      const begun = yield* onAgentSide(phaseOne(next))
      expect((yield* adminEnv.request("DELETE", `/v3.0/agents/${A}`, admin)).status).toEqual(204)
      expect(detail(yield* onAgentSide(phaseTwo(next, begun)))).toEqual([401, EndedText.deleted])

      // enrolled again there with another machine's AK: the cached token creates nothing here
      yield* Effect.orDie(adminAgents.add(A, yield* onAgentSide(enrolOtherMachine)))
      expect(detail((yield* onAgentSide(attestOnce(A, next))).created)).toEqual([401, EndedText.deleted])
      expect((yield* adminEnv.request("GET", `/v3.0/agents/${A}/attestations`, admin)).json.data).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(simulatedAgent("push-token-processes"))), 180_000)
})
