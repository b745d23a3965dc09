/**
 * The direct routes (src/verifier/http/v3/directRoutes.ts) answer a push attestation's two requests
 * exactly as the router does. A query string sends the same request through the platform and the
 * router; each answer is compared whole (status, headers but the date, body) for refusals that
 * change nothing (bad token, other agent's token, wrong media type, malformed and invalid
 * documents, an unknown index, a body too large or too deep, premature attestation), and the two
 * phases of an attestation give the same statuses, headers and document shapes either way. Both
 * are counted under the router's route templates in the request metrics.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { rawRequest } from "../../src/http/client.js"
import { JSON_API_MEDIA_TYPE } from "../../src/http/jsonapi.js"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { capabilitiesOf, collectEvidence } from "../../src/push-agent/evidence.js"
import { enrol, openSession, PushTestEnv, pushVerifier, SimAgent, simulatedAgent, verdict } from "./support.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00d00"
const OTHER = "d432fbb3-d2f1-4a97-9ef7-75bd81c00d01"

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** The same request straight (direct route) and with a query string (the router). */
const both = (method: string, path: string, headers: Record<string, string>, body: string) =>
  Effect.gen(function*() {
    const env = yield* PushTestEnv
    const send = (p: string) =>
      rawRequest({ method, baseUrl: env.url, path: p, tls: { ca: env.ca }, headers, body }).pipe(
        Effect.map((r): Answer => {
          const { date: _date, ...rest } = r.headers
          return { status: r.status, headers: rest, body: r.body }
        }),
        Effect.orDie
      )
    return { direct: yield* send(path), routed: yield* send(`${path}?via=router`) }
  })

const shapeOf = (u: unknown): unknown =>
  Array.isArray(u) ? u.map(shapeOf) : typeof u === "object" && u !== null ? Object.fromEntries(Object.entries(u).map(([k, v]) => [k, shapeOf(v)])) : typeof u

describe("push direct routes", () => {
  it.live("answer as the router: refusals whole, both phases in status, headers and shape", () =>
    Effect.gen(function*() {
      yield* enrol(AGENT)
      yield* enrol(OTHER)
      const sim = yield* SimAgent
      const token = (yield* openSession(AGENT)).token!
      const caps = yield* Effect.orDie(capabilitiesOf(sim.id, sim.source))
      const createBody = JSON.stringify({ data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported, system_info: { boot_time: caps.bootTime } } } })
      const agentHeaders = { authorization: `Bearer ${token}`, "content-type": JSON_API_MEDIA_TYPE }
      const attestations = `/v3.0/agents/${AGENT}/attestations`

      const refusals: ReadonlyArray<readonly [string, string, string, Record<string, string>, string, number]> = [
        ["unknown token", "POST", attestations, { ...agentHeaders, authorization: `Bearer ${token.slice(0, -4)}AAAA` }, createBody, 401],
        ["not a bearer header", "POST", attestations, { ...agentHeaders, authorization: "Basic abc" }, createBody, 401],
        ["another agent's resource", "POST", `/v3.0/agents/${OTHER}/attestations`, agentHeaders, createBody, 403],
        ["wrong media type", "POST", attestations, { ...agentHeaders, "content-type": "text/plain" }, createBody, 415],
        ["malformed JSON", "POST", attestations, agentHeaders, "{", 400],
        ["invalid document", "POST", attestations, agentHeaders, JSON.stringify({ data: { type: "attestation", attributes: { evidence_supported: "no" } } }), 422],
        ["too deep", "POST", attestations, agentHeaders, "[".repeat(5000) + "]".repeat(5000), 400],
        ["too large", "POST", attestations, agentHeaders, "x".repeat(2 * 1024 * 1024), 413],
        ["no attestation yet", "PATCH", `${attestations}/latest`, agentHeaders, JSON.stringify({ data: { type: "attestation", attributes: { evidence_collected: [] } } }), 404],
        ["not an index", "PATCH", `${attestations}/first`, agentHeaders, "{}", 404]
      ]
      for (const [name, method, path, headers, body, status] of refusals) {
        const answer = yield* both(method, path, headers, body)
        expect([name, answer.direct.status]).toEqual([name, status])
        expect([name, answer.direct]).toEqual([name, answer.routed])
      }

      // the two phases, once straight and once through the router (the premature 429 between them compared whole)
      const phases = (suffix: string) =>
        Effect.gen(function*() {
          const env = yield* PushTestEnv
          const send = (method: string, path: string, body: string) =>
            rawRequest({ method, baseUrl: env.url, path: path + suffix, tls: { ca: env.ca }, headers: agentHeaders, body }).pipe(Effect.orDie)
          const created = yield* send("POST", attestations, createBody)
          const requested = JSON.parse(created.body).data.attributes.evidence_requested
          const evidence = yield* Effect.orDie(collectEvidence(sim.tpm, sim.id, sim.source, requested))
          const submitted = yield* send("PATCH", created.headers["location"]!, JSON.stringify({ data: { type: "attestation", attributes: { evidence_collected: evidence } } }))
          const judged = yield* verdict(AGENT)
          const { date: _c, ...createdHeaders } = created.headers
          const { date: _s, ...submittedHeaders } = submitted.headers
          return {
            created: [created.status, Object.keys(createdHeaders).sort(), shapeOf(JSON.parse(created.body))],
            submitted: [submitted.status, Object.keys(submittedHeaders).sort(), shapeOf(JSON.parse(submitted.body))],
            evaluation: judged.json.data.attributes.evaluation
          }
        })
      const direct = yield* phases("")
      expect([direct.created[0], direct.submitted[0], direct.evaluation]).toEqual([201, 202, "pass"])
      const premature = yield* both("POST", attestations, agentHeaders, createBody)
      expect(premature.direct.status).toEqual(429)
      expect(premature.direct).toEqual(premature.routed)
      yield* Effect.sleep("1100 millis") // quote_interval 1 s
      const routed = yield* phases("?via=router")
      expect(routed).toEqual(direct)

      const metrics = yield* scrapePrometheus
      for (const route of ["/v3/agents/:agent_id/attestations", "/v3/agents/:agent_id/attestations/:index"]) {
        expect([route, metrics.includes(`route="${route}"`)]).toEqual([route, true])
      }
    }).pipe(Effect.provide(Layer.merge(pushVerifier("sqlite"), simulatedAgent("push-direct")))), 120_000)
})
