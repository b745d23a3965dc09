/**
 * The verifier's API over HTTPS with real certificates on SQLite and PostgreSQL: add an agent (the
 * body keylime_tenant sends), show it, list it (ids, bulk, ?verifier=), runtime and measured-boot
 * policies added, listed, shown and deleted, stop/reactivate/delete telling the poller.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { HttpApiClient } from "@effect/platform"
import { Effect } from "effect"
import type { AgentCreateRequest, LegacyAgentCreateRequest } from "../../schemas/Verifier.js"
import { HttpsClientLayer } from "../../src/http/client.js"
import { VerifierApi } from "../../src/verifier/http/Api.js"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "./apiHarness.js"
import { backends, record, recordedPolicyBase64, recordingPoller, validBody } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const A = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`verifier API over HTTPS on ${backend}`, () => {
    const withVerifier = <A, E>(f: (call: (c: Parameters<typeof vcall>[2]) => ReturnType<typeof vcall>) => Effect.Effect<A, E>, poller = recordingPoller()) =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db, poller: poller.layer })
        return yield* f((c) => vcall(pki, v, c))
      })

    it.scopedLive("adds an agent, shows and lists it; stop, reactivate and delete reach the poller", () => {
      const poller = recordingPoller(new Set([A]))
      return withVerifier((call) =>
        Effect.gen(function*() {
          expect(summary(yield* call({ method: "GET", path: "/v2.6/agents/" }))).toEqual({ status: 200, text: "Success", results: { uuids: [] } })
          expect(summary(yield* call({ method: "POST", path: `/v2.6/agents/${A}`, json: validBody() }))).toEqual({ status: 200, text: "Success", results: {} })
          const shown = yield* call({ method: "GET", path: `/v2.6/agents/${A}` })
          expect(shown.status).toBe(200)
          expect(shown.json).toMatchObject({ code: 200, status: "Success", results: { operational_state: 1, ip: "127.0.0.1", port: 1, has_runtime_policy: 0 } })
          const legacy = yield* call({ method: "GET", path: `/v2.1/agents/${A}` })
          expect(legacy.json).toMatchObject({ results: { allowlist_len: 0, mb_refstate_len: 0 } })
          expect(summary(yield* call({ method: "GET", path: "/v2.6/agents/" })).results).toEqual({ uuids: [[A]] })
          expect(summary(yield* call({ method: "GET", path: "/v2.6/agents/?verifier=other" })).results).toEqual({ uuids: [] })
          const bulk = summary(yield* call({ method: "GET", path: "/v2.6/agents/?bulk=true" }))
          expect(Object.keys(bulk.results as object)).toEqual([A])
          // as Keylime's tenant asks (`cvlist`, `bulkinfo`): an empty `verifier` is no filter, any `bulk` value is bulk
          expect(summary(yield* call({ method: "GET", path: "/v2.6/agents/?verifier=" })).results).toEqual({ uuids: [[A]] })
          const tenantBulk = summary(yield* call({ method: "GET", path: "/v2.6/agents/?bulk=True&verifier=" }))
          expect(Object.keys(tenantBulk.results as object)).toEqual([A])
          expect(summary(yield* call({ method: "POST", path: `/v2.6/agents/${A}`, json: validBody() }))).toEqual({
            status: 409,
            text: (record("ver-add-duplicate").response.body as { status: string }).status,
            results: {}
          })
          expect(summary(yield* call({ method: "PUT", path: `/v2.6/agents/${A}/stop` })).status).toBe(200)
          expect((yield* call({ method: "GET", path: `/v2.6/agents/${A}` })).json).toMatchObject({ results: { operational_state: 10 } })
          expect(summary(yield* call({ method: "PUT", path: `/v2.6/agents/${A}/reactivate` })).status).toBe(200)
          expect(summary(yield* call({ method: "DELETE", path: `/v2.6/agents/${A}` }))).toEqual({ status: 200, text: "Success", results: {} })
          expect(summary(yield* call({ method: "GET", path: `/v2.6/agents/${A}` }))).toEqual({ status: 404, text: "agent id not found", results: {} })
          // an active agent polled by another process is marked TERMINATED (8) for it to delete: 202
          const B = "d432fbb3-d2f1-4a97-9ef7-75bd81c00012"
          expect(summary(yield* call({ method: "POST", path: `/v2.5/agents/${B}`, json: validBody() })).status).toBe(200)
          expect(summary(yield* call({ method: "DELETE", path: `/v2.6/agents/${B}` }))).toEqual({ status: 202, text: "Accepted", results: {} })
          expect((yield* call({ method: "GET", path: `/v2.6/agents/${B}` })).json).toMatchObject({ results: { operational_state: 8 } })
          expect(poller.calls.filter((c) => c.agentId === A)).toEqual([
            { op: "start", agentId: A },
            { op: "stop", agentId: A },
            { op: "start", agentId: A },
            { op: "stop", agentId: A }
          ])
        }), poller)
    })

    it.scopedLive("runtime and measured-boot policies: add 201, list, show, delete 204 (also on the singular path)", () =>
      withVerifier((call) =>
        Effect.gen(function*() {
          const policy = { runtime_policy: recordedPolicyBase64() }
          expect(summary(yield* call({ method: "POST", path: "/v2.6/allowlists/rt1", json: policy }))).toEqual({ status: 201, text: "Created", results: {} })
          expect(summary(yield* call({ method: "POST", path: "/v2.6/allowlists/rt2", json: policy })).status).toBe(201)
          expect(summary(yield* call({ method: "GET", path: "/v2.6/allowlists/" })).results).toEqual({ "runtimepolicy names": ["rt1", "rt2"] })
          const shown = summary(yield* call({ method: "GET", path: "/v2.6/allowlists/rt1" }))
          expect(shown.results).toMatchObject({ name: "rt1", tmp_policy: null })
          const del = yield* call({ method: "DELETE", path: "/v2.6/allowlists/rt1" })
          expect({ status: del.status, body: del.body }).toEqual({ status: 204, body: "" })
          expect((yield* call({ method: "DELETE", path: "/v2.6/allowlist/rt2" })).status).toBe(204)
          expect(summary(yield* call({ method: "GET", path: "/v2.6/allowlists" })).results).toEqual({ "runtimepolicy names": [] })
          expect(summary(yield* call({ method: "DELETE", path: "/v2.6/allowlists/rt1" }))).toEqual({ status: 404, text: "Runtime policy rt1 not found", results: {} })

          expect(summary(yield* call({ method: "POST", path: "/v2.3/mbpolicies/mb1", json: { mb_policy: "{}" } })).status).toBe(201)
          expect(summary(yield* call({ method: "GET", path: "/v2.6/mbpolicies/" })).results).toEqual({ "mbpolicy names": ["mb1"] })
          expect(summary(yield* call({ method: "GET", path: "/v2.6/mbpolicies/mb1" })).results).toEqual({ name: "mb1", mb_policy: "{}" })
          expect((yield* call({ method: "DELETE", path: "/v2.6/mbpolicies/mb1" })).status).toBe(204)
        })))

    it.scopedLive("HttpApiClient derived from VerifierApi (what the tenant uses) adds, lists, shows and deletes", () =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db, poller: recordingPoller(new Set([A])).layer })
        const client = yield* HttpApiClient.make(VerifierApi, { baseUrl: `${v.url}/v2.6` })
        yield* client.agents.add({ path: { agent_id: A }, payload: validBody() as unknown as AgentCreateRequest })
        expect(yield* client.agents.list({ urlParams: {} })).toEqual({ uuids: [[A]] })
        expect(yield* client.agents.show({ path: { agent_id: A } })).toMatchObject({ operational_state: 1, verifier_id: "default" })
        const refused = yield* Effect.flip(client.agents.add({ path: { agent_id: A }, payload: validBody() as unknown as AgentCreateRequest }))
        expect(refused).toMatchObject({ _tag: "Conflict", message: `Agent of uuid ${A} already exists. Please use delete or update.` })
        yield* client.allowlists.add({ path: { name: "rt1" }, payload: { runtime_policy: recordedPolicyBase64() } })
        expect(yield* client.allowlists.list()).toEqual({ "runtimepolicy names": [A, "rt1"] })
        yield* client.allowlists.remove({ path: { name: "rt1" } })
        expect(yield* client.agents.remove({ path: { agent_id: A } })).toBe("deleted")
        // an agent another process polls: 202, decoded as "terminating"
        const B = "d432fbb3-d2f1-4a97-9ef7-75bd81c00012"
        yield* client.agents.add({ path: { agent_id: B }, payload: validBody() as unknown as AgentCreateRequest })
        expect(yield* client.agents.remove({ path: { agent_id: B } })).toBe("terminating")
        const missing = yield* Effect.flip(client.agents.show({ path: { agent_id: A } }))
        expect(missing).toMatchObject({ _tag: "NotFound", message: "agent id not found" })
      }).pipe(Effect.provide(HttpsClientLayer(pki.clients.admin))))

    it.scopedLive("every creation body variant over HTTPS: the 2.1-era body (allowlist, vtpm_policy) through the typed client, the spec's 2.5 body with mb_refstate", () =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db })
        const client = yield* HttpApiClient.make(VerifierApi, { baseUrl: `${v.url}/v2.1` })
        const { runtime_policy: _r, runtime_policy_name: _n, runtime_policy_key: _k, mb_policy: _m, mb_policy_name: _mn, ...rest } = validBody()
        const policyText = Buffer.from(recordedPolicyBase64(), "base64").toString()
        const legacy = { ...rest, vtpm_policy: "{\"mask\": \"0x0\"}", allowlist: policyText } as unknown as LegacyAgentCreateRequest
        yield* client.agents.add({ path: { agent_id: "legacy-1" }, payload: legacy })
        expect(yield* client.agents.show({ path: { agent_id: "legacy-1" } })).toMatchObject({ vtpm_policy: "{\"mask\": \"0x0\"}", allowlist_len: 3, mb_refstate_len: 0 })
        const refstate = JSON.stringify({ has_secureboot: false, kernels: [] })
        const spec = yield* vcall(pki, v, { method: "POST", path: "/v2.5/agents/spec-25", json: { ...rest, runtime_policy: "", mb_refstate: refstate } })
        expect(summary(spec)).toEqual({ status: 200, text: "Success", results: {} })
        expect((yield* vcall(pki, v, { method: "GET", path: "/v2.5/agents/spec-25" })).json).toMatchObject({ results: { has_mb_refstate: 1, has_runtime_policy: 0 } })
      }).pipe(Effect.provide(HttpsClientLayer(pki.clients.admin))))

    it.scopedLive("GET /version is public and /openapi.json describes the API", () =>
      withVerifier((call) =>
        Effect.gen(function*() {
          expect(summary(yield* call({ method: "GET", path: "/version", who: "none" })).results).toEqual({
            current_version: "2.6",
            supported_versions: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]
          })
          // a path served under other methods only: 405 naming them, with Allow (Keylime answers 405 too)
          const put = yield* call({ method: "PUT", path: `/v2.6/agents/${A}` })
          expect(summary(put)).toEqual({ status: 405, text: `Method Not Allowed: PUT is not served on /v2.6/agents/${A} (allowed: GET, POST, DELETE)`, results: {} })
          expect(put.headers["allow"]).toBe("GET, POST, DELETE")
          expect(summary(yield* call({ method: "PUT", path: `/v2.6/agents/${A}/foo` })).status).toBe(404)
          const doc = yield* call({ method: "GET", path: "/openapi.json", who: "none" })
          expect(doc.status).toBe(200)
          expect(Object.keys((doc.json as { paths: object }).paths)).toContain("/v{api_version}/agents/{agent_id}")
        })))
  })
}
