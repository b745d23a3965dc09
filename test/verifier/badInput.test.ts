/**
 * Bad input on every verifier endpoint over HTTPS, on SQLite and PostgreSQL: 400 with the field
 * named (Keylime's words where the capture fixes them), nothing stored; a duplicate is 409; an
 * unknown agent or policy is 404 (Keylime's 400 for stop/reactivate, 409 for an mb-policy PUT);
 * the platform's body limits (413 over max_upload_size, 400 for JSON nested too deep, malformed
 * JSON naming the parser's complaint).
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { DbLive } from "../../src/db/Sql.js"
import { testDatabase } from "../support/db.js"
import { readVectorText } from "../support/vectors.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "./apiHarness.js"
import { backends, record, recordedPolicyBase64, snapshotTables, validBody } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const ID = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"
const b64 = (s: string) => Buffer.from(s).toString("base64")
const without = (k: string) => () => {
  const b = validBody()
  delete b[k]
  return b
}
const set = (k: string, v: unknown) => () => ({ ...validBody(), [k]: v })

interface Case {
  readonly name: string
  readonly method: string
  readonly path: string
  /** JSON body, or a raw string sent verbatim. */
  readonly body?: (() => unknown) | string
  readonly status: number
  /** The exact status text, or a pattern that names the field. */
  readonly text: string | RegExp
}

const CASES: ReadonlyArray<Case> = [
  // --- POST /agents/:id -----------------------------------------------------------------------
  { name: "agent: empty body", method: "POST", path: `/v2.6/agents/${ID}`, body: "", status: 400, text: "Expected non zero content length" },
  { name: "agent: malformed JSON", method: "POST", path: `/v2.6/agents/${ID}`, body: "{bad", status: 400, text: /^Malformed JSON body: / },
  { name: "agent: {}", method: "POST", path: `/v2.6/agents/${ID}`, body: () => ({}), status: 400, text: "Exception error: 'tpm_policy'" },
  { name: "agent: a JSON list", method: "POST", path: `/v2.6/agents/${ID}`, body: () => [1, 2], status: 400, text: "body must be a JSON object" },
  { name: "agent: no ak_tpm", method: "POST", path: `/v2.6/agents/${ID}`, body: without("ak_tpm"), status: 400, text: "Exception error: 'ak_tpm'" },
  { name: "agent: null runtime_policy", method: "POST", path: `/v2.6/agents/${ID}`, body: set("runtime_policy", null), status: 400, text: /NoneType/ },
  { name: "agent: no mtls_cert", method: "POST", path: `/v2.6/agents/${ID}`, body: without("mtls_cert"), status: 400, text: "mTLS certificate for agent is required!" },
  { name: "agent: port x", method: "POST", path: `/v2.6/agents/${ID}`, body: set("cloudagent_port", "x"), status: 400, text: "Exception error: invalid literal for int() with base 10: 'x'" },
  { name: "agent: port 70000", method: "POST", path: `/v2.6/agents/${ID}`, body: set("cloudagent_port", 70000), status: 400, text: /^cloudagent_port / },
  { name: "agent: tpm_policy not JSON", method: "POST", path: `/v2.6/agents/${ID}`, body: set("tpm_policy", "mask"), status: 400, text: /^tpm_policy / },
  { name: "agent: ak_tpm garbage", method: "POST", path: `/v2.6/agents/${ID}`, body: set("ak_tpm", b64("garbage")), status: 400, text: /^ak_tpm / },
  { name: "agent: runtime_policy not base64", method: "POST", path: `/v2.6/agents/${ID}`, body: set("runtime_policy", "%%%"), status: 400, text: /^runtime_policy / },
  { name: "agent: runtime_policy not JSON", method: "POST", path: `/v2.6/agents/${ID}`, body: set("runtime_policy", b64("not json")), status: 400, text: /^Exception error: Expecting value/ },
  { name: "agent: mb_policy not JSON", method: "POST", path: `/v2.6/agents/${ID}`, body: set("mb_policy", "{x"), status: 400, text: /^mb_policy / },
  { name: "agent: bad id", method: "POST", path: "/v2.6/agents/bad%20id!", body: validBody, status: 400, text: /^agent_id not valid: an agent id must be 1-255 characters/ },
  { name: "agent: unknown runtime policy name", method: "POST", path: `/v2.6/agents/${ID}`, body: () => ({ ...validBody(), runtime_policy: "", runtime_policy_name: "nope" }), status: 404, text: "Could not find IMA policy with name nope!" },
  { name: "agent: unknown mb policy name", method: "POST", path: `/v2.6/agents/${ID}`, body: set("mb_policy_name", "nope-mb"), status: 404, text: "Could not find mb_policy with name nope-mb!" },
  // --- other agent routes ---------------------------------------------------------------------
  { name: "show: bad id", method: "GET", path: "/v2.6/agents/bad%20id!", status: 400, text: /^agent_id not valid: an agent id must be 1-255 characters/ },
  { name: "show: unknown", method: "GET", path: `/v2.6/agents/${ID}`, status: 404, text: "agent id not found" },
  { name: "delete: unknown", method: "DELETE", path: `/v2.6/agents/${ID}`, status: 404, text: "agent id not found" },
  { name: "delete: bad id", method: "DELETE", path: "/v2.6/agents/bad%20id!", status: 400, text: /^agent_id not valid: an agent id must be 1-255 characters/ },
  { name: "stop: unknown", method: "PUT", path: `/v2.6/agents/${ID}/stop`, status: 400, text: "Exception error: No row was found when one was required" },
  { name: "reactivate: unknown", method: "PUT", path: `/v2.6/agents/${ID}/reactivate`, status: 400, text: "Exception error: No row was found when one was required" },
  // --- runtime policies -----------------------------------------------------------------------
  { name: "allowlist: empty body", method: "POST", path: "/v2.6/allowlists/rt-bad", body: "", status: 400, text: "Expected non zero content length" },
  { name: "allowlist: no runtime_policy", method: "POST", path: "/v2.6/allowlists/rt-bad", body: () => ({}), status: 400, text: /^runtime_policy is required/ },
  { name: "allowlist: not base64", method: "POST", path: "/v2.6/allowlists/rt-bad", body: () => ({ runtime_policy: "%%%" }), status: 400, text: /^runtime_policy / },
  { name: "allowlist: not JSON", method: "POST", path: "/v2.6/allowlists/rt-bad", body: () => ({ runtime_policy: b64("nope") }), status: 400, text: "Runtime policy is not valid JSON!" },
  { name: "allowlist: schema", method: "POST", path: "/v2.6/allowlists/rt-bad", body: () => ({ runtime_policy: b64("{\"digests\": {}}") }), status: 400, text: /^Runtime policy is malformatted: / },
  { name: "allowlist: sig without key", method: "POST", path: "/v2.6/allowlists/rt-bad", body: () => ({ runtime_policy: recordedPolicyBase64(), runtime_policy_sig: b64("sig") }), status: 400, text: /^runtime_policy_sig / },
  { name: "allowlist: tpm_policy not JSON", method: "POST", path: "/v2.6/allowlists/rt-bad", body: () => ({ runtime_policy: recordedPolicyBase64(), tpm_policy: "x" }), status: 400, text: /^tpm_policy / },
  { name: "allowlist: bad name", method: "POST", path: "/v2.6/allowlists/bad%20name", body: () => ({ runtime_policy: recordedPolicyBase64() }), status: 400, text: /^name must be / },
  { name: "allowlist: show unknown", method: "GET", path: "/v2.6/allowlists/nope", status: 404, text: "Runtime policy nope not found" },
  { name: "allowlist: update unknown", method: "PUT", path: "/v2.6/allowlists/nope", body: () => ({ runtime_policy: recordedPolicyBase64() }), status: 404, text: "Runtime policy with name nope does not already exist, use POST to create" },
  { name: "allowlist: delete unknown", method: "DELETE", path: "/v2.6/allowlists/nope", status: 404, text: "Runtime policy nope not found" },
  { name: "allowlist: singular delete unknown", method: "DELETE", path: "/v2.6/allowlist/nope", status: 404, text: "Runtime policy nope not found" },
  // --- measured-boot policies -----------------------------------------------------------------
  { name: "mbpolicy: not a string", method: "POST", path: "/v2.6/mbpolicies/mb-bad", body: () => ({ mb_policy: 7 }), status: 400, text: /^mb_policy / },
  { name: "mbpolicy: not JSON", method: "POST", path: "/v2.6/mbpolicies/mb-bad", body: () => ({ mb_policy: "{x" }), status: 400, text: /^mb_policy / },
  { name: "mbpolicy: malformed", method: "POST", path: "/v2.6/mbpolicies/mb-bad", body: "{", status: 400, text: /^Malformed JSON body/ },
  { name: "mbpolicy: show unknown", method: "GET", path: "/v2.6/mbpolicies/nope", status: 404, text: "Measured boot policy nope not found" },
  { name: "mbpolicy: update unknown", method: "PUT", path: "/v2.6/mbpolicies/nope", body: () => ({ mb_policy: "{}" }), status: 409, text: "Measured boot policy with name nope does not already exist" },
  { name: "mbpolicy: delete unknown", method: "DELETE", path: "/v2.6/mbpolicies/nope", status: 404, text: "Measured boot policy nope not found" },
  // --- verify/identity and verify/evidence ----------------------------------------------------
  { name: "identity: no agent_uuid", method: "GET", path: "/v2.6/verify/identity?quote=q&nonce=n&hash_alg=sha256", status: 400, text: "missing query parameter 'agent_uuid'" },
  { name: "identity: no hash_alg", method: "GET", path: `/v2.6/verify/identity?agent_uuid=${ID}&quote=q&nonce=n`, status: 400, text: "missing query parameter 'hash_alg'" },
  { name: "identity: unknown agent", method: "GET", path: `/v2.6/verify/identity?agent_uuid=${ID}&quote=q&nonce=n&hash_alg=sha256`, status: 404, text: "agent id not found" },
  { name: "evidence: no type", method: "POST", path: "/v2.6/verify/evidence", body: () => ({ data: {} }), status: 400, text: "missing parameter 'type'" },
  { name: "evidence: no data", method: "POST", path: "/v2.6/verify/evidence", body: () => ({ type: "tpm" }), status: 400, text: "missing parameter 'data'" },
  { name: "evidence: type foo", method: "POST", path: "/v2.6/verify/evidence", body: () => ({ type: "foo", data: {} }), status: 400, text: "invalid evidence type" },
  { name: "evidence: malformed", method: "POST", path: "/v2.6/verify/evidence", body: "{", status: 400, text: /^Malformed JSON body/ }
]

const send = (c: Case) =>
  c.body === undefined ? {} : typeof c.body === "string" ? { body: c.body } : { json: c.body() }

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`verifier bad input over HTTPS on ${backend}`, () => {
    it.scopedLive("every refusal names the field (Keylime's words where recorded) and stores nothing", () =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db })
        const tables = snapshotTables.pipe(Effect.provide(DbLive(db, "verifier")), Effect.orDie)
        const before = yield* tables
        for (const c of CASES) {
          const r = summary(yield* vcall(pki, v, { method: c.method, path: c.path, ...send(c) }))
          expect(r.status, c.name).toBe(c.status)
          if (typeof c.text === "string") expect(r.text, c.name).toBe(c.text)
          else expect(r.text, c.name).toMatch(c.text)
          if (r.status === 400) expect(r.results === undefined || typeof r.results === "object", c.name).toBe(true)
        }
        expect(yield* tables).toEqual(before)
      }))

    it.scopedLive("duplicates are 409, a policy in use cannot be deleted (409 naming the agent), an evidence input error carries its failures", () =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db })
        const call = (method: string, path: string, json?: unknown) => vcall(pki, v, { method, path, ...(json === undefined ? {} : { json }) })
        expect((yield* call("POST", "/v2.6/allowlists/rt1", { runtime_policy: recordedPolicyBase64() })).status).toBe(201)
        expect(summary(yield* call("POST", "/v2.6/allowlists/rt1", { runtime_policy: recordedPolicyBase64() }))).toEqual({
          status: 409,
          text: "Runtime policy with name rt1 already exists",
          results: {}
        })
        expect((yield* call("POST", "/v2.6/mbpolicies/mb1", { mb_policy: "{}" })).status).toBe(201)
        expect(summary(yield* call("POST", "/v2.6/mbpolicies/mb1", { mb_policy: "{}" })).status).toBe(409)
        const body = { ...validBody(), runtime_policy: "", runtime_policy_name: "rt1", mb_policy: null, mb_policy_name: "mb1" }
        expect((yield* call("POST", `/v2.6/agents/${ID}`, body)).status).toBe(200)
        expect(summary(yield* call("POST", `/v2.6/agents/${ID}`, body))).toEqual({
          status: 409,
          text: `Agent of uuid ${ID} already exists. Please use delete or update.`,
          results: {}
        })
        expect(summary(yield* call("DELETE", "/v2.6/allowlists/rt1"))).toEqual({
          status: 409,
          text: `Can't delete allowlist as it's currently in use by agent ${ID}`,
          results: {}
        })
        expect(summary(yield* call("DELETE", "/v2.6/mbpolicies/mb1"))).toEqual({
          status: 409,
          text: `Can't delete mb_policy as it's currently in use by agent ${ID}`,
          results: {}
        })
        const inline = { ...validBody(), runtime_policy: recordedPolicyBase64(), runtime_policy_name: "rt1" }
        expect(summary(yield* call("POST", "/v2.6/agents/d432fbb3-d2f1-4a97-9ef7-75bd81c00012", inline))).toEqual({
          status: 409,
          text: (record("ver-add-policy-name-conflict").response.body as { status: string }).status,
          results: {}
        })
        const missing = summary(yield* call("POST", "/v2.6/verify/evidence", record("ver-evidence-missing-quote").request.body))
        expect(missing).toEqual({ status: 400, text: "Bad Request", results: (record("ver-evidence-missing-quote").response.body as { results: unknown }).results })
      }))

    it.scopedLive("DSSE-signed runtime policies over HTTPS: verified at upload (201), a bad signature or a signed policy without its key is 401 and stores nothing; inline at agent creation too", () =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db })
        const data = (name: string) => readVectorText("keylime", "test", "data", name)
        const key = b64(data("runtime-policy-pubkey.pub"))
        const call = (method: string, path: string, json: unknown) => vcall(pki, v, { method, path, json })
        expect(summary(yield* call("POST", "/v2.6/allowlists/signed", { runtime_policy: b64(data("runtime-policy-test-signed.json")), runtime_policy_key: key }))).toEqual({ status: 201, text: "Created", results: {} })
        const bad = summary(yield* call("POST", "/v2.6/allowlists/bad", { runtime_policy: b64(data("runtime-policy-test-signed-bad.json")), runtime_policy_key: key }))
        expect(bad).toEqual({ status: 401, text: "Runtime policy failed DSSE signature verification!", results: {} })
        const noKey = summary(yield* call("POST", "/v2.6/allowlists/nokey", { runtime_policy: b64(data("runtime-policy-test-signed.json")) }))
        expect(noKey).toEqual({ status: 401, text: "Runtime policy signature verification required but no key was given!", results: {} })
        const inline = summary(yield* call("POST", `/v2.6/agents/${ID}`, { ...validBody(), runtime_policy: b64(data("runtime-policy-test-signed-bad.json")), runtime_policy_key: key }))
        expect(inline).toEqual({ status: 401, text: "Runtime policy failed DSSE signature verification!", results: {} })
        expect(summary(yield* vcall(pki, v, { method: "GET", path: "/v2.6/allowlists/" })).results).toEqual({ "runtimepolicy names": ["signed"] })
        expect(summary(yield* vcall(pki, v, { method: "GET", path: "/v2.6/agents/" })).results).toEqual({ uuids: [] })
      }))

    it.scopedLive("bodies over max_upload_size are 413 and JSON nested deeper than 64 levels is 400, before any handler", () =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        const v = yield* startVerifier({ pki, db, maxBodyBytes: 4096 })
        const big = { runtime_policy: "A".repeat(8192) }
        const r = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/allowlists/big", json: big }))
        expect(r).toEqual({ status: 413, text: "Request body exceeds the limit of 4096 bytes", results: {} })
        const deep = "[".repeat(100) + "]".repeat(100)
        const d = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", body: deep }))
        expect(d).toEqual({ status: 400, text: "Malformed JSON body: nested deeper than 64 levels", results: {} })
        expect(summary(yield* vcall(pki, v, { method: "GET", path: "/v2.6/allowlists/" })).results).toEqual({ "runtimepolicy names": [] })
      }))
  })
}
