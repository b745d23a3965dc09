/**
 * API 3.0 administration over HTTPS (spec §4.4), on SQLite and PostgreSQL: CRUD round trips of IMA
 * policies, UEFI reference states and agents as JSON:API resources (201 with Location, 200, 204);
 * 404 for unknown resources, 409 for a taken id and a policy in use; bad documents refused with
 * JSON:API errors (415, 400 and 422 with source.pointer) and nothing stored; GET / redirects to
 * /v3.0/; /v3.0/verify/* answer as the v2 routes do.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { backends, recordedPolicyBase64, snapshotTables, validBody } from "../verifier/support.js"
import { b64, policyOfMachine, PushTestEnv, pushVerifier } from "./support.js"

const A = "aaaaaaaa-0000-4000-8000-00000000000a"
const B = "bbbbbbbb-0000-4000-8000-00000000000b"
const REFSTATE = JSON.stringify({ scrtm_and_bios: [{ scrtm: "0x1234" }] })

const agentDoc = (id: string, attributes: Record<string, unknown>) => ({ data: { type: "agent", id, attributes } })
const imaDoc = (id: string | undefined, attributes: Record<string, unknown>) => ({ data: { type: "ima_policy", ...(id === undefined ? {} : { id }), attributes } })
const uefiDoc = (id: string | undefined, attributes: Record<string, unknown>) => ({ data: { type: "uefi_refstate", ...(id === undefined ? {} : { id }), attributes } })
/** A pull agent's creation body without an inline policy. */
const pullBody = () => ({ ...validBody(), runtime_policy: "" })

describe.each(backends)("v3 administration on %s", (backend, available) => {
  it.live.skipIf(!available)("IMA policies, UEFI reference states and agents: create, read, list, change, delete", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const admin = { admin: true } as const
      const sql = yield* SqlClient.SqlClient

      // --- IMA policy ---
      const created = yield* env.request("POST", "/v3.0/policies/ima", { ...admin, body: imaDoc("pol-a", { runtime_policy: recordedPolicyBase64() }) })
      expect([created.status, created.headers["location"], created.headers["content-type"]?.split(";")[0]]).toEqual([201, "/v3.0/policies/ima/pol-a", "application/vnd.api+json"])
      expect([created.json.data.type, created.json.data.id, created.json.data.links, created.json.data.attributes.tpm_policy]).toEqual(["ima_policy", "pol-a", { self: "/v3.0/policies/ima/pol-a" }, null])
      const shown = yield* env.request("GET", "/v3.0/policies/ima/pol-a", admin)
      expect([shown.status, shown.json.data.id, typeof shown.json.data.attributes.runtime_policy]).toEqual([200, "pol-a", "string"])
      const replacement = b64(policyOfMachine(""))
      const patched = yield* env.request("PATCH", "/v3.0/policies/ima/pol-a", { ...admin, body: imaDoc("pol-a", { runtime_policy: replacement, tpm_policy: "{\"mask\": \"0x400\"}" }) })
      expect([patched.status, patched.json.data.attributes.tpm_policy]).toEqual([200, "{\"mask\": \"0x400\"}"])
      expect((yield* env.request("GET", "/v3.0/policies/ima/pol-a", admin)).json.data.attributes.runtime_policy).toEqual(policyOfMachine(""))
      const list = yield* env.request("GET", "/v3.0/policies/ima", admin)
      expect([list.status, list.json.data]).toEqual([200, [{ type: "ima_policy", id: "pol-a", attributes: {}, links: { self: "/v3.0/policies/ima/pol-a" } }]])
      const taken = yield* env.request("POST", "/v3.0/policies/ima", { ...admin, body: imaDoc("pol-a", { runtime_policy: replacement }) })
      expect([taken.status, taken.json.errors]).toEqual([409, [{ status: "409", code: "conflict", detail: "An IMA policy named 'pol-a' already exists.", source: { pointer: "/data/id" } }]])

      // --- UEFI reference state ---
      const ref = yield* env.request("POST", "/v3/refstates/uefi", { ...admin, body: uefiDoc("ref-a", { mb_policy: REFSTATE }) })
      expect([ref.status, ref.headers["location"], ref.json.data]).toEqual([201, "/v3/refstates/uefi/ref-a", {
        type: "uefi_refstate",
        id: "ref-a",
        attributes: { mb_policy: REFSTATE },
        links: { self: "/v3/refstates/uefi/ref-a" }
      }])
      const refPatched = yield* env.request("PATCH", "/v3.0/refstates/uefi/ref-a", { ...admin, body: uefiDoc(undefined, { mb_policy: "{}" }) })
      expect([refPatched.status, refPatched.json.data.attributes]).toEqual([200, { mb_policy: "{}" }])
      yield* env.request("PATCH", "/v3.0/refstates/uefi/ref-a", { ...admin, body: uefiDoc(undefined, { mb_policy: REFSTATE }) })
      expect((yield* env.request("GET", "/v3.0/refstates/uefi", admin)).json.data.map((r: any) => r.id)).toEqual(["ref-a"])
      expect((yield* env.request("POST", "/v3.0/refstates/uefi", { ...admin, body: uefiDoc("ref-a", {}) })).status).toEqual(409)

      // --- agents ---
      const enrolled = yield* env.request("POST", "/v3.0/agents", { ...admin, body: agentDoc(A, pullBody()) })
      expect([enrolled.status, enrolled.headers["location"], enrolled.json.data.type, enrolled.json.data.id]).toEqual([201, `/v3.0/agents/${A}`, "agent", A])
      const a = enrolled.json.data.attributes
      expect([a.operational_state, a.runtime_policy_name, a.mb_policy_name, a.tpm_policy, a.push, "revocation_key" in a, "v" in a]).toEqual([1, A, A, "{\"mask\": \"0x400\"}", null, false, false])
      expect((yield* env.request("POST", "/v3.0/agents", { ...admin, body: agentDoc(A, pullBody()) })).json.errors).toEqual([
        { status: "409", code: "conflict", detail: `Agent '${A}' already exists. Delete it or change it with PATCH.`, source: { pointer: "/data/id" } }
      ])
      expect((yield* env.request("POST", "/v3.0/agents", { ...admin, body: agentDoc(B, pullBody()) })).status).toEqual(201)
      const agents = yield* env.request("GET", "/v3.0/agents", admin)
      expect([agents.status, agents.json.data.map((r: any) => [r.id, r.links.self])]).toEqual([200, [[A, `/v3.0/agents/${A}`], [B, `/v3.0/agents/${B}`]]])

      // PATCH: policies by name and configuration, checked as at creation
      const generation = Number((yield* sql<{ g: unknown }>`SELECT generation AS g FROM verifier_agents WHERE agent_id = ${A}`)[0]!.g)
      const changed = yield* env.request("PATCH", `/v3.0/agents/${A}`, {
        ...admin,
        body: agentDoc(A, {
          runtime_policy_name: "pol-a",
          mb_policy_name: "ref-a",
          tpm_policy: "{\"mask\": \"0x1\"}",
          accept_tpm_hash_algs: ["sha256"],
          cloudagent_port: 9002,
          metadata: "{\"site\": \"lab\"}"
        })
      })
      expect(changed.status).toEqual(200)
      const c = changed.json.data.attributes
      expect([c.runtime_policy_name, c.mb_policy_name, c.tpm_policy, c.accept_tpm_hash_algs, c.port, c.meta_data, c.has_runtime_policy, c.has_mb_refstate])
        .toEqual(["pol-a", "ref-a", "{\"mask\": \"0x1\"}", ["sha256"], 9002, "{\"site\": \"lab\"}", 1, 1])
      const row = (yield* sql<any>`SELECT runtime_policy_name, mb_policy_name, port, generation FROM verifier_agents WHERE agent_id = ${A}`)[0]
      expect([row.runtime_policy_name, row.mb_policy_name, Number(row.port), Number(row.generation)]).toEqual(["pol-a", "ref-a", 9002, generation + 1])
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, admin)).json.data.attributes.runtime_policy_name).toEqual("pol-a")

      // in use: 409 naming the agent
      expect((yield* env.request("DELETE", "/v3.0/policies/ima/pol-a", admin)).json.errors).toEqual([
        { status: "409", code: "conflict", detail: `IMA policy 'pol-a' is in use by agent '${A}'.` }
      ])
      expect((yield* env.request("DELETE", "/v3.0/refstates/uefi/ref-a", admin)).json.errors).toEqual([
        { status: "409", code: "conflict", detail: `UEFI reference state 'ref-a' is in use by agent '${A}'.` }
      ])

      // stop, reactivate, delete
      expect((yield* env.request("PUT", `/v3.0/agents/${A}/stop`, admin)).status).toEqual(204)
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, admin)).json.data.attributes.operational_state).toEqual(10)
      expect((yield* env.request("PUT", `/v3.0/agents/${A}/reactivate`, admin)).status).toEqual(204)
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, admin)).json.data.attributes.operational_state).toEqual(1)
      // active and polled by no process here: marked for the polling process (202)
      const marked = yield* env.request("DELETE", `/v3.0/agents/${A}`, admin)
      expect([marked.status, marked.json.links]).toEqual([202, { self: `/v3.0/agents/${A}` }])
      expect((yield* env.request("GET", `/v3.0/agents/${A}`, admin)).json.data.attributes.operational_state).toEqual(8)
      expect((yield* env.request("PUT", `/v3.0/agents/${B}/stop`, admin)).status).toEqual(204)
      const gone = yield* env.request("DELETE", `/v3.0/agents/${B}`, admin)
      expect([gone.status, gone.json]).toEqual([204, undefined])
      expect((yield* env.request("GET", `/v3.0/agents/${B}`, admin)).json.errors).toEqual([{ status: "404", code: "not_found", detail: `No enrolled agent with ID '${B}'.` }])
      // B's own policies went with it; a policy no agent uses is deleted
      expect((yield* env.request("POST", "/v3.0/policies/ima", { ...admin, body: imaDoc("pol-b", { runtime_policy: replacement }) })).status).toEqual(201)
      expect((yield* env.request("DELETE", "/v3.0/policies/ima/pol-b", admin)).status).toEqual(204)
      expect((yield* env.request("GET", "/v3.0/policies/ima/pol-b", admin)).json.errors).toEqual([{ status: "404", code: "not_found", detail: "No IMA policy named 'pol-b'." }])
      expect((yield* env.request("POST", "/v3.0/refstates/uefi", { ...admin, body: uefiDoc("ref-b", { mb_policy: null }) })).status).toEqual(201)
      expect((yield* env.request("DELETE", "/v3.0/refstates/uefi/ref-b", admin)).status).toEqual(204)

      // unknown resources: 404
      const unknown = "cccccccc-0000-4000-8000-00000000000c"
      for (const [method, path, body] of [
        ["GET", `/v3.0/agents/${unknown}`, undefined],
        ["PATCH", `/v3.0/agents/${unknown}`, agentDoc(unknown, { tpm_policy: "{}" })],
        ["DELETE", `/v3.0/agents/${unknown}`, undefined],
        ["PUT", `/v3.0/agents/${unknown}/stop`, undefined],
        ["PUT", `/v3.0/agents/${unknown}/reactivate`, undefined],
        ["GET", "/v3.0/agents/not%20an%20id", undefined]
      ] as const) {
        const r = yield* env.request(method, path, { ...admin, ...(body === undefined ? {} : { body }) })
        expect([method, path, r.status, r.json.errors[0].code]).toEqual([method, path, 404, "not_found"])
      }
      for (const [method, path, body] of [
        ["GET", "/v3.0/policies/ima/nope", undefined],
        ["PATCH", "/v3.0/policies/ima/nope", imaDoc(undefined, { runtime_policy: replacement })],
        ["DELETE", "/v3.0/policies/ima/nope", undefined],
        ["GET", "/v3.0/refstates/uefi/nope", undefined],
        ["PATCH", "/v3.0/refstates/uefi/nope", uefiDoc(undefined, { mb_policy: "{}" })],
        ["DELETE", "/v3.0/refstates/uefi/nope", undefined]
      ] as const) {
        const r = yield* env.request(method, path, { ...admin, ...(body === undefined ? {} : { body }) })
        expect([method, path, r.status, r.json.errors[0].code]).toEqual([method, path, 404, "not_found"])
      }
    }).pipe(Effect.provide(pushVerifier(backend))), 120_000)

  it.live.skipIf(!available)("bad documents: JSON:API errors with pointers, nothing stored", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const admin = { admin: true } as const
      expect((yield* env.request("POST", "/v3.0/agents", { ...admin, body: agentDoc(A, pullBody()) })).status).toEqual(201)
      const before = yield* snapshotTables

      const refusals: ReadonlyArray<readonly [string, string, unknown, string | undefined, number, string | undefined, string | undefined]> = [
        // method, path, body, content type, status, pointer, detail
        ["POST", "/v3.0/agents", agentDoc(B, pullBody()), "application/json", 415, undefined, undefined],
        ["POST", "/v3.0/agents", "{not json", undefined, 400, undefined, undefined],
        ["POST", "/v3.0/agents", { data: { type: "attestation", id: B, attributes: pullBody() } }, undefined, 400, "/data/type", "Request body must include agent data ('data.type' must be 'agent')."],
        ["POST", "/v3.0/agents", { data: { type: "agent", id: B } }, undefined, 400, "/data/attributes", "Request body must include agent attributes."],
        ["POST", "/v3.0/agents", { data: { type: "agent", attributes: pullBody() } }, undefined, 422, "/data/id", "Attribute 'id' is required."],
        ["POST", "/v3.0/agents", agentDoc("bad id!", pullBody()), undefined, 422, "/data/id", undefined],
        ["POST", "/v3.0/agents", agentDoc(B, { ...pullBody(), ak_tpm: undefined }), undefined, 422, "/data/attributes/ak_tpm", "Attribute 'ak_tpm' is required."],
        ["POST", "/v3.0/agents", agentDoc(B, { ...pullBody(), tpm_policy: "not json" }), undefined, 422, "/data/attributes/tpm_policy", undefined],
        ["POST", "/v3.0/agents", agentDoc(B, { ...pullBody(), accept_tpm_hash_algs: ["md5"] }), undefined, 422, "/data/attributes/accept_tpm_hash_algs", undefined],
        ["POST", "/v3.0/agents", agentDoc(B, { ...pullBody(), runtime_policy_name: "missing" }), undefined, 404, "/data/attributes/runtime_policy_name", "No IMA policy named 'missing'."],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { ak_tpm: "AAAA" }), undefined, 422, "/data/attributes/ak_tpm", undefined],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { runtime_policy: "AAAA" }), undefined, 422, "/data/attributes/runtime_policy", undefined],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { colour: "blue" }), undefined, 422, "/data/attributes/colour", undefined],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { cloudagent_port: "many" }), undefined, 422, "/data/attributes/cloudagent_port", undefined],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { tpm_policy: "[1]", metadata: "{}" }), undefined, 422, "/data/attributes/tpm_policy", undefined],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { runtime_policy_name: "missing" }), undefined, 404, "/data/attributes/runtime_policy_name", "No IMA policy named 'missing'."],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { mb_policy_name: "" }), undefined, 422, "/data/attributes/mb_policy_name", "Attribute 'mb_policy_name' must name a stored policy."],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(A, { accept_attestations: false }), undefined, 422, "/data/attributes/accept_attestations", "Attribute 'accept_attestations' applies to push agents only (this agent has not attested by push)."],
        ["PATCH", `/v3.0/agents/${A}`, agentDoc(B, { tpm_policy: "{}" }), undefined, 409, "/data/id", `'data.id' is '${B}' but the request is for '${A}'.`],
        ["POST", "/v3.0/policies/ima", imaDoc("pol-x", { runtime_policy: "%%%" }), undefined, 422, "/data/attributes/runtime_policy", "Attribute 'runtime_policy' is not valid base64."],
        ["POST", "/v3.0/policies/ima", imaDoc("pol-x", {}), undefined, 422, "/data/attributes/runtime_policy", undefined],
        ["POST", "/v3.0/policies/ima", imaDoc("pol x", { runtime_policy: recordedPolicyBase64() }), undefined, 422, "/data/id", undefined],
        ["POST", "/v3.0/policies/ima", uefiDoc("pol-x", { runtime_policy: recordedPolicyBase64() }), undefined, 400, "/data/type", undefined],
        ["POST", "/v3.0/refstates/uefi", uefiDoc("ref-x", { mb_policy: "not json" }), undefined, 422, "/data/attributes/mb_policy", "Attribute 'mb_policy' is not JSON."],
        ["POST", "/v3.0/refstates/uefi", uefiDoc("ref-x", { mb_policy: 7 }), undefined, 422, "/data/attributes/mb_policy", undefined]
      ]
      const seen: Array<unknown> = []
      const wanted: Array<unknown> = []
      for (const [method, path, body, contentType, status, pointer, detail] of refusals) {
        const r = yield* env.request(method, path, { ...admin, body, ...(contentType === undefined ? {} : { contentType }) })
        const e = r.json?.errors?.[0]
        seen.push([method, path, JSON.stringify(body).slice(0, 60), r.status, e?.status, e?.source?.pointer, detail === undefined ? undefined : e?.detail])
        wanted.push([method, path, JSON.stringify(body).slice(0, 60), status, String(status), pointer, detail])
      }
      expect(seen).toEqual(wanted)
      expect(yield* snapshotTables).toEqual(before)
    }).pipe(Effect.provide(pushVerifier(backend))), 120_000)

  it.live.skipIf(!available)("every route with a body refuses 5,000-deep JSON (400) and an oversized body (413), and stores nothing", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const admin = { admin: true } as const
      expect((yield* env.request("POST", "/v3.0/agents", { ...admin, body: agentDoc(A, pullBody()) })).status).toEqual(201)
      const before = yield* snapshotTables
      const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`
      const big = JSON.stringify({ data: { type: "agent", id: B, attributes: { metadata: "x".repeat(32_768) } } })
      const seen: Array<unknown> = []
      for (const [method, path] of [
        ["POST", "/v3.0/agents"],
        ["PATCH", `/v3.0/agents/${A}`],
        ["POST", "/v3.0/policies/ima"],
        ["PATCH", "/v3.0/policies/ima/pol"],
        ["POST", "/v3.0/refstates/uefi"],
        ["PATCH", "/v3.0/refstates/uefi/ref"]
      ] as const) {
        const d = yield* env.request(method, path, { ...admin, body: deep })
        const b = yield* env.request(method, path, { ...admin, body: big })
        seen.push([method, path, d.status, d.json?.errors?.[0]?.status, b.status, b.json?.errors?.[0]?.status])
      }
      expect(seen).toEqual(seen.map(([m, p]: any) => [m, p, 400, "400", 413, "413"]))
      expect(yield* snapshotTables).toEqual(before)
    }).pipe(Effect.provide(pushVerifier(backend, {}, { maxBodyBytes: 16_384 }))), 120_000)

  it.live.skipIf(!available)("GET / redirects to /v3.0/; /v3.0/verify/* answer as the v2 routes", () =>
    Effect.gen(function*() {
      const env = yield* PushTestEnv
      const root = yield* env.request("GET", "/")
      expect([root.status, root.headers["location"]]).toEqual([307, "/v3.0/"])
      expect((yield* env.request("GET", "/v3.0/")).status).toEqual(200)
      for (const [method, path, body] of [
        ["GET", "/verify/identity", undefined],
        ["GET", "/verify/identity?agent_uuid=x&nonce=1&quote=q&hash_alg=sha256", undefined],
        ["POST", "/verify/evidence", {}],
        ["POST", "/verify/evidence", { type: "tpm", data: {} }]
      ] as const) {
        const o = body === undefined ? {} : { body, contentType: "application/json" }
        const v2 = yield* env.request(method, `/v2.6${path}`, o)
        const v3 = yield* env.request(method, `/v3.0${path}`, o)
        expect([path, v3.status, v3.headers["content-type"]?.split(";")[0], v3.json]).toEqual([path, v2.status, "application/json", v2.json])
        expect(typeof v3.json.code).toEqual("number")
      }
    }).pipe(Effect.provide(pushVerifier(backend))), 60_000)
})
