/**
 * The push exchange over HTTPS with real certificates, a simulated TPM and machine, on SQLite and
 * PostgreSQL (push-model.md §1): session (challenge, TPM2_Certify proof, token), phase 1 (201,
 * Location, challenge, chosen parameters, evidence requested, challenges_expire_at), phase 2 (202,
 * meta.seconds_to_next_attestation), the background verdict pass; 429 premature_attestation with
 * Retry-After; the next cycle sends only new IMA entries; tampering fails with policy_violation; a
 * forged quote fails with broken_evidence_chain.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { keysFromJwks } from "../../src/ear/key.js"
import { EAR_MEDIA_TYPE, verifyEar } from "../../src/ear/token.js"
import { rawRequest } from "../../src/http/client.js"
import { JSON_API_MEDIA_TYPE } from "../../src/http/jsonapi.js"
import { backends } from "../verifier/support.js"
import { attestOnce, enrol, openSession, PushTestEnv, pushVerifier, SimAgent, simulatedAgent, verdict } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"
const ISO_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/

describe.each(backends)("push exchange on %s", (backend, available) => {
  it.live.skipIf(!available)("session, two phases, pass; premature 429; only new IMA entries; tampering and forgery fail", () =>
    Effect.gen(function*() {
      yield* enrol(AGENT)
      const env = yield* PushTestEnv
      const sim = yield* SimAgent

      const session = yield* openSession(AGENT)
      expect(session.created.status).toEqual(200)
      expect(session.created.json.data.attributes.challenges_expire_at).toMatch(ISO_MICROS)
      expect(Buffer.from(session.challenge, "base64").length).toEqual(16)
      expect(session.proved.status).toEqual(200)
      expect(session.proved.json.data.attributes.evaluation).toEqual("pass")
      const token = session.token!
      expect(token.startsWith(`${session.sessionId}.`)).toEqual(true)

      // cycle 1
      const first = yield* attestOnce(AGENT, token)
      expect(first.created.status).toEqual(201)
      expect(first.created.headers["content-type"]).toEqual(JSON_API_MEDIA_TYPE)
      expect(first.created.headers["location"]).toEqual(`/v3.0/agents/${AGENT}/attestations/0`)
      const attrs = first.created.json.data.attributes
      expect(attrs.stage).toEqual("awaiting_evidence")
      expect(attrs.evidence_requested.map((e: any) => e.evidence_type)).toEqual(["tpm_quote", "ima_log"])
      const quote = attrs.evidence_requested[0].chosen_parameters
      expect([quote.hash_algorithm, quote.signature_scheme, quote.selected_subjects]).toEqual(["sha256", "rsassa", { sha256: [10] }])
      expect(attrs.evidence_requested[1].chosen_parameters).toEqual({ starting_offset: 0, format: "text/plain" })
      expect(attrs.challenges_expire_at).toMatch(ISO_MICROS)
      expect(first.submitted!.status).toEqual(202)
      expect(first.submitted!.json.meta).toEqual({ seconds_to_next_attestation: 1 })
      expect(first.submitted!.json.data.attributes.stage).toEqual("evaluating_evidence")
      const v1 = yield* verdict(AGENT)
      expect([v1.status, v1.json.data.attributes.stage, v1.json.data.attributes.evaluation, v1.json.data.attributes.failure_reason]).toEqual([
        200,
        "verification_complete",
        "pass",
        null
      ])

      // too early: 429 with Retry-After
      const early = yield* attestOnce(AGENT, token)
      expect(early.created.status).toEqual(429)
      expect(early.created.json.errors[0].code).toEqual("premature_attestation")
      expect(early.created.headers["retry-after"]).toEqual("1")

      // cycle 2: only the entries the verifier has not seen
      yield* Effect.sleep("1100 millis")
      const entries = yield* sim.machine.entries
      const second = yield* attestOnce(AGENT, token)
      expect(second.created.status).toEqual(201)
      expect(second.created.json.data.attributes.evidence_requested[1].chosen_parameters.starting_offset).toEqual(entries)
      expect(second.submitted!.status).toEqual(202)
      expect((yield* verdict(AGENT)).json.data.attributes.evaluation).toEqual("pass")

      // tampering: a file the policy does not allow
      yield* Effect.orDie(sim.machine.measure("/usr/bin/evil", "not in the policy"))
      yield* Effect.sleep("1100 millis")
      const third = yield* attestOnce(AGENT, token)
      expect(third.submitted!.status).toEqual(202)
      const v3 = yield* verdict(AGENT)
      expect([v3.json.data.attributes.evaluation, v3.json.data.attributes.failure_reason]).toEqual(["fail", "policy_violation"])
      // the v2 status an admin reads says why, as a pull agent's does, and shows no address (it listens on none)
      const pushFields = (r: Record<string, unknown>) => ({
        ip: r["ip"],
        port: r["port"],
        attestation_status: r["attestation_status"],
        last_event_id: r["last_event_id"],
        message: typeof r["last_event_message"] === "string" && r["last_event_message"].includes("/usr/bin/evil"),
        attestation_model: r["attestation_model"],
        last_evaluation: r["last_evaluation"],
        last_attestation_index: r["last_attestation_index"],
        last_failure_reason: r["last_failure_reason"],
        last_failure_at: typeof r["last_failure_at"] === "number" && r["last_failure_at"] > 1_700_000_000
      })
      const expected = {
        ip: null,
        port: null,
        attestation_status: "FAIL",
        last_event_id: "ima.validation.ima-ng.not_in_allowlist",
        message: true,
        attestation_model: "push",
        last_evaluation: "fail",
        last_attestation_index: 2,
        last_failure_reason: "policy_violation",
        last_failure_at: true
      }
      expect(pushFields((yield* env.request("GET", `/v2.6/agents/${AGENT}`, { admin: true })).json.results)).toEqual(expected)
      expect(pushFields((yield* env.request("GET", `/v2.6/agents/?bulk=true`, { admin: true })).json.results[AGENT])).toEqual(expected)

      // a forged quote: the attestation's bytes changed after signing
      yield* Effect.sleep("1100 millis")
      const forged = yield* attestOnce(AGENT, token, (e) => {
        const q = e[0]
        const bytes = Buffer.from(q.data.message, "base64")
        bytes[bytes.length - 1] ^= 1
        return [{ ...q, data: { ...q.data, message: bytes.toString("base64") } }, ...e.slice(1)]
      })
      expect(forged.submitted!.status).toEqual(202)
      const v4 = yield* verdict(AGENT)
      expect([v4.json.data.attributes.evaluation, v4.json.data.attributes.failure_reason]).toEqual(["fail", "broken_evidence_chain"])

      // verdicts as signed EARs (Accept: application/eat+jwt), checked with the verifier's published JWKS
      const keys = Either.getOrThrow(keysFromJwks((yield* rawRequest({ method: "GET", baseUrl: env.url, path: "/.well-known/ear-jwks.json", tls: { ca: env.ca } }).pipe(Effect.orDie)).body))
      const earOf = (index: string) =>
        rawRequest({ method: "GET", baseUrl: env.url, path: `/v3.0/agents/${AGENT}/attestations/${index}`, tls: env.admin, headers: { accept: EAR_MEDIA_TYPE } }).pipe(
          Effect.orDie,
          Effect.tap((r) => expect([r.status, r.headers["content-type"]?.split(";")[0]]).toEqual([200, EAR_MEDIA_TYPE])),
          Effect.flatMap((r) => Effect.orDie(verifyEar(r.body, keys))),
          Effect.map(({ claims }) => ({ sub: claims.sub, status: Object.values(claims.submods).map((m) => m["ear.status"]) }))
        )
      expect(yield* earOf("0")).toEqual({ sub: AGENT, status: ["affirming"] })
      expect(yield* earOf("latest")).toEqual({ sub: AGENT, status: ["contraindicated"] })

      // the list, and the agent's own status (FAIL after failures)
      const list = yield* env.request("GET", `/v3.0/agents/${AGENT}/attestations`, { admin: true })
      expect(list.json.data.map((a: any) => a.attributes.evaluation)).toEqual(["pass", "pass", "fail", "fail"])
      const own = yield* env.request("GET", `/v3.0/agents/${AGENT}`, { token })
      expect([own.status, own.json.data.attributes.attestation_status, own.json.data.attributes.attestation_count]).toEqual([200, "FAIL", 2])

      // the same process serves API 2.x: the push status in the v2 envelope, to the admin and to the agent's token
      const v2 = yield* env.request("GET", `/v2.6/agents/${AGENT}`, { admin: true })
      expect([v2.status, v2.headers["content-type"]?.split(";")[0], v2.json.results.attestation_status, v2.json.results.attestation_count]).toEqual([200, "application/json", "FAIL", 2])
      const v2own = yield* env.request("GET", `/v2.6/agents/${AGENT}`, { token })
      expect([v2own.status, v2own.json]).toEqual([200, expect.objectContaining({ code: 200 })])
      expect(v2own.json.results.attestation_status).toEqual("FAIL")
      expect((yield* env.request("GET", `/v2.6/agents/${AGENT}`, { token: "x.y" })).status).toEqual(403)
      // v2 reactivation forgets the failures: PASS again
      expect((yield* env.request("PUT", `/v2.6/agents/${AGENT}/reactivate`, { admin: true })).status).toEqual(200)
      expect((yield* env.request("GET", `/v3.0/agents/${AGENT}`, { admin: true })).json.data.attributes.attestation_status).toEqual("PASS")
    }).pipe(Effect.provide(Layer.merge(pushVerifier(backend), simulatedAgent("push-exchange")))), 120_000)
})
