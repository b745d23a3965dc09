/**
 * Bad API 3.0 input over HTTPS is refused with JSON:API errors and changes nothing: a wrong media
 * type (415), a document of the wrong type (400, pointer /data/type), missing attributes (422 with
 * pointers), capabilities the agent's policy cannot use (422), evidence in the wrong shape or order
 * (422), evidence for an attestation that is not the latest (403 old_attestation), evidence twice
 * (403 evidence_immutable), evidence after challenges_expire_at (403 challenges_expired), a session
 * without agent_id (400), an unknown session (404), a bad proof (401 with evaluation fail).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { capabilitiesOf, collectEvidence } from "../../src/push-agent/evidence.js"
import { attestOnce, enrol, openSession, PushTestEnv, pushVerifier, SimAgent, simulatedAgent } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"
const path = `/v3.0/agents/${AGENT}/attestations`

describe("push bad input", () => {
  it.live("refused with JSON:API errors, nothing changed", () =>
    Effect.gen(function*() {
      yield* enrol(AGENT)
      const env = yield* PushTestEnv
      const sim = yield* SimAgent
      const token = (yield* openSession(AGENT)).token!
      const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
      const phase1 = { data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported, system_info: { boot_time: caps.bootTime } } } }

      const media = yield* env.request("POST", path, { token, body: phase1, contentType: "application/json" })
      expect([media.status, media.json.errors[0].status]).toEqual([415, "415"])
      const wrongType = yield* env.request("POST", path, { token, body: { data: { type: "session", attributes: {} } } })
      expect([wrongType.status, wrongType.json.errors[0].code, wrongType.json.errors[0].source]).toEqual([400, "invalid_request", { pointer: "/data/type" }])
      const missing = yield* env.request("POST", path, { token, body: { data: { type: "attestation", attributes: { system_info: { boot_time: caps.bootTime } } } } })
      expect([missing.status, missing.json.errors]).toEqual([422, [{
        status: "422",
        code: "invalid_resource_data",
        detail: "Attribute 'evidence_supported' is required.",
        source: { pointer: "/data/attributes/evidence_supported" }
      }]])
      const noQuote = yield* env.request("POST", path, { token, body: { data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported.slice(1), system_info: { boot_time: caps.bootTime } } } } })
      expect([noQuote.status, noQuote.json.errors[0].source.pointer, noQuote.json.errors[0].detail]).toEqual([
        422,
        "/data/attributes/evidence_supported",
        "Attribute 'evidence_supported' must have 'tpm_quote' with capabilities which are valid and satisfy agent policy (check 'evidence_type')."
      ])
      const listed = yield* env.request("GET", path, { admin: true })
      expect(listed.json.data).toEqual([])

      // a real attestation 0, then bad evidence for it
      const created = yield* env.request("POST", path, { token, body: phase1 })
      expect(created.status).toEqual(201)
      const requested = created.json.data.attributes.evidence_requested
      const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, requested))
      const reversed = yield* env.request("PATCH", `${path}/0`, { token, body: { data: { type: "attestation", attributes: { evidence_collected: [...evidence].reverse() } } } })
      expect([reversed.status, reversed.json.errors[0].source.pointer]).toEqual([422, "/data/attributes/evidence_collected/0/evidence_type"])
      const short = yield* env.request("PATCH", `${path}/0`, { token, body: { data: { type: "attestation", attributes: { evidence_collected: evidence.slice(0, 1) } } } })
      expect([short.status, short.json.errors[0].source.pointer]).toEqual([422, "/data/attributes/evidence_collected"])
      const badBase64 = yield* env.request("PATCH", `${path}/0`, {
        token,
        body: { data: { type: "attestation", attributes: { evidence_collected: [{ ...evidence[0], data: { ...(evidence[0] as any).data, message: "%%%" } }, ...evidence.slice(1)] } } }
      })
      expect([badBase64.status, badBase64.json.errors[0].source.pointer]).toEqual([422, "/data/attributes/evidence_collected/0/data/message"])
      const unknownIndex = yield* env.request("PATCH", `${path}/7`, { token, body: { data: { type: "attestation", attributes: { evidence_collected: evidence } } } })
      expect([unknownIndex.status, unknownIndex.json.errors[0].detail]).toEqual([404, `No attestation 7 exists for agent '${AGENT}'.`])
      const still = yield* env.request("GET", `${path}/0`, { admin: true })
      expect([still.json.data.attributes.stage, still.json.data.attributes.evidence.map((e: any) => e.data)]).toEqual(["awaiting_evidence", [{}, {}]])

      // a new attestation makes 0 old; evidence twice is refused
      const again = yield* attestOnce(AGENT, token)
      expect(again.submitted!.status).toEqual(202)
      const old = yield* env.request("PATCH", `${path}/0`, { token, body: { data: { type: "attestation", attributes: { evidence_collected: evidence } } } })
      expect([old.status, old.json.errors[0].code]).toEqual([403, "old_attestation"])
      const twice = yield* env.request("PATCH", `${path}/latest`, { token, body: { data: { type: "attestation", attributes: { evidence_collected: evidence } } } })
      expect([twice.status, twice.json.errors[0].code]).toEqual([403, "evidence_immutable"])

      // sessions
      const noId = yield* env.request("POST", "/v3.0/sessions", { body: { data: { type: "session", attributes: { authentication_supported: [] } } } })
      expect([noId.status, noId.json.errors[0]]).toEqual([400, { status: "400", title: "Bad Request", detail: "agent_id is required" }])
      const noPop = yield* env.request("POST", "/v3.0/sessions", { body: { data: { type: "session", attributes: { agent_id: AGENT, authentication_supported: [] } } } })
      expect([noPop.status, noPop.json.errors[0].detail]).toEqual([400, "authentication_supported must include tpm_pop authentication type"])
      const nosuch = yield* env.request("PATCH", "/v3.0/sessions/00000000-0000-4000-8000-000000000000", { body: { data: { type: "session", attributes: { agent_id: AGENT, authentication_provided: [] } } } })
      expect([nosuch.status, nosuch.json.errors[0].detail]).toEqual([404, "Session not found"])
      const s = yield* env.request("POST", "/v3.0/sessions", { body: { data: { type: "session", attributes: { agent_id: AGENT, authentication_supported: [{ authentication_class: "pop", authentication_type: "tpm_pop" }] } } } })
      const forged = yield* env.request("PATCH", `/v3.0/sessions/${s.json.data.id}`, {
        body: { data: { type: "session", attributes: { agent_id: AGENT, authentication_provided: [{ authentication_class: "pop", authentication_type: "tpm_pop", data: { message: "AAAA", signature: "AAAA" } }] } } }
      })
      expect([forged.status, forged.json.data.attributes.evaluation, forged.json.data.attributes.token]).toEqual([401, "fail", undefined])
    }).pipe(Effect.provide(Layer.merge(pushVerifier("sqlite", { quote_interval: 0 }), simulatedAgent("push-bad-input")))), 120_000)

  it.live("evidence after challenges_expire_at is 403 challenges_expired", () =>
    Effect.gen(function*() {
      yield* enrol(AGENT)
      const env = yield* PushTestEnv
      const sim = yield* SimAgent
      const token = (yield* openSession(AGENT)).token!
      const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
      const created = yield* env.request("POST", path, { token, body: { data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported, system_info: { boot_time: caps.bootTime } } } } })
      const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, created.json.data.attributes.evidence_requested))
      yield* Effect.sleep("1100 millis")
      const late = yield* env.request("PATCH", created.headers["location"]!, { token, body: { data: { type: "attestation", attributes: { evidence_collected: evidence } } } })
      expect([late.status, late.json.errors[0].code]).toEqual([403, "challenges_expired"])
      expect(late.json.errors[0].detail).toMatch(/^Challenges for attestation 0 expired at .*\. Create a new attestation and try again\.$/)
    }).pipe(Effect.provide(Layer.merge(pushVerifier("sqlite", { challenge_lifetime: 1 }), simulatedAgent("push-late")))), 120_000)
})
