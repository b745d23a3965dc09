/**
 * Wire compatibility: the 151 verifier exchanges captured from the real Keylime verifier
 * (`vectors/keylime-wire/verifier.jsonl`) replayed in order against attest's verifier over HTTPS
 * on a fresh database (SQLite, then PostgreSQL), with the capture's settings (pull mode, enable_agent_mtls, verifier_id
 * default, quote_interval 2). Every exchange must be identical (status, media type, body without
 * the volatile fields) unless it is in DIFFERENCES below, where each entry says why and what attest
 * answers instead.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { testDatabase } from "../support/db.js"
import { readVectorText } from "../support/vectors.js"
import { makeTestPki, removePki, startVerifier, vcall, type VParsed } from "./apiHarness.js"
import { backends, owningPoller } from "./support.js"
import { mediaType, withoutVolatile } from "../support/wireRecords.js"

interface WireRecord {
  readonly id: string
  readonly request: {
    readonly method: string
    readonly path: string
    readonly query?: Record<string, string>
    readonly headers?: Record<string, string>
    readonly body?: unknown
    readonly client_cert?: "admin" | "none" | "foreign"
  }
  readonly response: { readonly status: number | null; readonly content_type?: string; readonly body?: unknown; readonly location?: string }
  readonly volatile?: ReadonlyArray<string>
}

const records: ReadonlyArray<WireRecord> = readVectorText("keylime-wire", "verifier.jsonl")
  .split("\n")
  .filter((l) => l.trim().length > 0)
  .map((l) => JSON.parse(l) as WireRecord)

/**
 * Fields attest adds to Keylime's bodies (a Keylime client ignores unknown keys): left out of
 * attest's answer before it is compared. `last_event_message`: what the last failure said;
 * `seconds_since_verified_quote` and `owner_runner`: a pull agent's freshness and owner (issue 24).
 */
const ATTEST_ADDITIONS: ReadonlyArray<string> = ["last_event_message", "seconds_since_verified_quote", "owner_runner"]

const withoutAdditions = (body: unknown): unknown => {
  if (Array.isArray(body)) return body.map(withoutAdditions)
  if (body === null || typeof body !== "object") return body
  return Object.fromEntries(Object.entries(body).filter(([k]) => !ATTEST_ADDITIONS.includes(k)).map(([k, v]) => [k, withoutAdditions(v)]))
}

interface Difference {
  readonly reason: string
  /** attest's status (Keylime's when left out) and a pattern its envelope status text must match. */
  readonly status?: number
  readonly text: RegExp
  /** What attest's results must be instead, given Keylime's (after removing the volatile fields). */
  readonly results?: (theirs: any) => unknown
  /** The answer is a JSON:API error document (API 3.0), `text` matching its first detail. */
  readonly jsonApi?: boolean
  /** The answer is a JSON:API document listing resources of this type (API 3.0). */
  readonly listOf?: string
}

const EMPTY_BODY =
  "Keylime's framework answers an empty text/html body; attest answers the same status with its envelope naming the problem (clients need no empty bodies)"
const NO_ROUTE = "Keylime's router answers 404 with an empty body for a path it does not serve; attest answers 404 with its envelope naming the method and path"
const NO_METHOD =
  "Keylime's router answers 405 with an empty body for a method a path does not serve; attest answers 405 with its envelope naming the methods served there (and an Allow header)"
const JSON_API_403 = "Keylime's 403 has a JSON:API {errors} body; attest answers 403 with its envelope and Keylime's detail text"
const VERSIONS = "supported_versions lists what attest's verifier serves (2.0-2.6); Keylime also lists 1.0 (which it answers 404) and 3.0 (500 in pull mode)"
const LEFTOVER =
  "a failed POST stores nothing in attest; Keylime leaves a runtime policy named 00000000-...-dead behind after the refused agent additions (and stores the refused mb-bad, c00091)"
const EVIDENCE_MESSAGE =
  "attest's IMA engine adds the entry number to Keylime's message and `line`/`path` to the context, and names the PCR bank (src/ima/verify.ts); types and order are Keylime's"
const STRICT_500 = "Keylime fails with 500 and an empty body; attest answers 400 naming the field"
const BAD_ID = "Keylime's text repeats the word \"not\" (issue 22); attest answers the same status with \"agent_id not valid\" and the rule an id follows"

const only = (names: ReadonlyArray<string>, drop: ReadonlyArray<string>) => names.filter((n) => !drop.includes(n))
const versions = () => ({ current_version: "2.6", supported_versions: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"] })
const failuresLoosely = (theirs: any) => ({
  ...theirs,
  failures: theirs.failures.map((f: any) => ({ type: f.type, context: expect.objectContaining({ message: expect.stringContaining(f.context.message.slice(f.context.message.lastIndexOf(" ") + 1)) }) }))
})

/** The reviewed list of deliberate differences, by exchange id. */
const DIFFERENCES: Readonly<Record<string, Difference>> = {
  "ver-add-bad-id": { reason: BAD_ID, text: /^agent_id not valid: an agent id must be 1-255 characters of letters, digits, '-', '_' or '\.'$/ },
  "ver-get-bad-id": { reason: BAD_ID, text: /^agent_id not valid: an agent id must be 1-255 characters of letters, digits, '-', '_' or '\.'$/ },
  "ver-version": { reason: VERSIONS, text: /^Success$/, results: versions },
  "ver-version-nocert": { reason: VERSIONS, text: /^Success$/, results: versions },
  "ver-versions": { reason: VERSIONS, text: /^Success$/, results: versions },
  "ver-v26-root": { reason: "Keylime answers 500 (its MainHandler bug); attest answers 404", status: 404, text: /^Not Found: no route for GET \/v2\.6\/$/ },
  "ver-add-malformed-json": { reason: EMPTY_BODY, text: /^Malformed JSON body: / },
  "ver-add-empty-body": { reason: EMPTY_BODY + " (Keylime's own handler text for it)", text: /^Expected non zero content length$/ },
  "ver-add-no-id": { reason: NO_METHOD, text: /^Method Not Allowed: POST is not served on \/v2\.6\/agents\/ \(allowed: GET\)$/ },
  "ver-add-nocert": { reason: JSON_API_403, text: /^Action create_agent requires admin authentication \(mTLS certificate\)$/ },
  "ver-get-ok-v21": {
    reason:
      "API 2.0-2.4 renders the earlier documented status (allowlist_len, mb_refstate_len, vtpm_policy, enc_alg without bit length: spec §2.2); Keylime renders the 2.5 shape for every version",
    text: /^Success$/,
    results: (theirs) => {
      const { has_mb_refstate: _m, has_runtime_policy: _r, attestation_period: _p, maximum_attestation_interval: _i, ...rest } = theirs
      return expect.objectContaining({ ...rest, vtpm_policy: null, allowlist_len: 0, mb_refstate_len: 0 })
    }
  },
  "ver-get-nocert": { reason: JSON_API_403, text: /^Action read_agent requires authentication$/ },
  "ver-list-nocert": { reason: JSON_API_403, text: /^Action list_agents requires admin authentication \(mTLS certificate\)$/ },
  "ver-list-foreign-cert": {
    reason: "Keylime aborts the TLS handshake (UNKNOWN_CA); attest completes it (the per-operation check decides) and answers 403 with the envelope",
    status: 403,
    text: /^Action list_agents requires admin authentication \(mTLS certificate\)$/
  },
  "ver-allowlist-list-initial": { reason: LEFTOVER, text: /^Success$/, results: (t) => ({ "runtimepolicy names": only(t["runtimepolicy names"], ["00000000-0000-0000-0000-00000000dead"]) }) },
  "ver-allowlist-add-invalid-json": { reason: STRICT_500, status: 400, text: /^Runtime policy is not valid JSON!$/ },
  "ver-allowlist-add-empty-body": { reason: EMPTY_BODY, text: /^Expected non zero content length$/ },
  "ver-allowlist-add-malformed": { reason: EMPTY_BODY, text: /^Malformed JSON body: / },
  "ver-allowlist-add-no-policy": { reason: STRICT_500, status: 400, text: /^runtime_policy is required/ },
  "ver-allowlist-list": { reason: LEFTOVER, text: /^Success$/, results: (t) => ({ "runtimepolicy names": only(t["runtimepolicy names"], ["00000000-0000-0000-0000-00000000dead"]) }) },
  "ver-allowlist-list-noslash": { reason: LEFTOVER, text: /^Success$/, results: (t) => ({ "runtimepolicy names": only(t["runtimepolicy names"], ["00000000-0000-0000-0000-00000000dead"]) }) },
  "ver-allowlist-nocert": { reason: JSON_API_403, text: /^Action list_runtime_policies requires admin authentication \(mTLS certificate\)$/ },
  "ver-mbpolicy-add-invalid-json": {
    reason: "Keylime stores an mb_policy that is not JSON (201) and fails when an agent uses it; attest refuses it at upload",
    status: 400,
    text: /^mb_policy is not JSON$/
  },
  "ver-mbpolicy-add-empty-body": { reason: EMPTY_BODY, text: /^Expected non zero content length$/ },
  "ver-mbpolicy-add-malformed": { reason: EMPTY_BODY, text: /^Malformed JSON body: / },
  "ver-mbpolicy-list": { reason: LEFTOVER, text: /^Success$/, results: (t) => ({ "mbpolicy names": only(t["mbpolicy names"], ["mb-bad"]) }) },
  "ver-mbpolicy-list-v25": { reason: LEFTOVER, text: /^Success$/, results: (t) => ({ "mbpolicy names": only(t["mbpolicy names"], ["mb-bad"]) }) },
  "ver-identity-post": { reason: NO_METHOD, text: /^Method Not Allowed: POST is not served on \/v2\.6\/verify\/identity \(allowed: GET\)$/ },
  "ver-evidence-ok-no-runtime-policy": { reason: EVIDENCE_MESSAGE, text: /^Success$/, results: failuresLoosely },
  "ver-evidence-ok-pcr-only": { reason: EVIDENCE_MESSAGE, text: /^Success$/, results: failuresLoosely },
  "ver-evidence-policy-fail": { reason: EVIDENCE_MESSAGE, text: /^Success$/, results: failuresLoosely },
  "ver-evidence-wrong-ak": {
    reason:
      "UPSTREAM BUG: Keylime answers valid: true for a quote checked with the EK as AK; attest never calls a quote valid whose signature it could not verify (the EK is no restricted signing key)",
    text: /^Success$/,
    results: () => ({
      valid: false,
      claims: {},
      failures: [{ type: "qoute_validation.quote_validation", context: { message: "Quote data validation", error: expect.stringMatching(/^the AK cannot verify quotes: the AK is not a restricted signing key/) } }]
    })
  },
  "ver-evidence-malformed": { reason: EMPTY_BODY, text: /^Malformed JSON body: / },
  "ver-evidence-get": { reason: NO_METHOD, text: /^Method Not Allowed: GET is not served on \/v2\.6\/verify\/evidence \(allowed: POST\)$/ },
  "ver-stop-empty-json-body": {
    reason: "Keylime's framework refuses a PUT with Content-Type JSON and no body (400, empty); stop takes no body, attest ignores it and answers for the unknown agent (Keylime's text)",
    text: /^Exception error: No row was found when one was required$/
  },
  "ver-put-other-subpath": { reason: NO_ROUTE, text: /^Not Found: no route for PUT \/v2\.6\/agents\/d432fbb3-d2f1-4a97-9ef7-75bd81c00011\/foo$/ },
  "ver-put-agent": { reason: NO_METHOD, text: /^Method Not Allowed: PUT is not served on \/v2\.6\/agents\/d432fbb3-d2f1-4a97-9ef7-75bd81c00011 \(allowed: GET, POST, DELETE\)$/ },
  "ver-stop-nocert": { reason: JSON_API_403, text: /^Action stop_agent requires admin authentication \(mTLS certificate\)$/ },
  "ver-delete-nocert": { reason: JSON_API_403, text: /^Action delete_agent requires admin authentication \(mTLS certificate\)$/ },
  "ver-unknown-route": { reason: NO_ROUTE, text: /^Not Found: no route for GET \/v2\.6\/foo$/ },
  "ver-unknown-version": { reason: EMPTY_BODY, text: /^API version 9\.9 is not supported/ },
  "ver-no-version-prefix": { reason: EMPTY_BODY, text: /^Not Found: no route for GET \/agents\/$/ },
  "ver-v10-prefix": { reason: EMPTY_BODY, text: /^API version 1\.0 is not supported/ },
  "ver-v3-list": {
    reason: "Keylime answers 500 (its v3 controller calls the v2 responder in pull mode; a 404 stub in push mode); attest serves the API 3.0 agent list (spec §4.4): a JSON:API document of `agent` resources",
    status: 200,
    text: /^$/,
    listOf: "agent"
  },
  "ver-unknown-route-nocert": { reason: NO_ROUTE, text: /^Not Found: no route for GET \/v2\.6\/foo$/ },
  "ver-delete-list": { reason: NO_METHOD, text: /^Method Not Allowed: DELETE is not served on \/v2\.6\/agents\/ \(allowed: GET\)$/ },
  "ver-add-runtime-policy-bad-b64": {
    reason: "Keylime's lenient base64 decodes \"%%%\" to an empty policy and adds the agent; attest refuses runtime_policy that is not strict base64",
    status: 400,
    text: /^runtime_policy is not valid base64/
  },
  "ver-list-late-adds": { reason: LEFTOVER, text: /^Success$/, results: (t) => ({ uuids: t.uuids.filter((u: Array<string>) => u[0] !== "d432fbb3-d2f1-4a97-9ef7-75bd81c00091") }) }
}

const pki = makeTestPki()
afterAll(() => removePki(pki))

for (const [backend, available] of backends) describe.skipIf(!available)(`Keylime verifier exchanges replayed against attest over HTTPS on ${backend}`, () => {
  it.scopedLive("answers every recorded exchange identically except the reviewed differences", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      // the capture's verifier polled the agents it added; a DELETE of one it polls is immediate (200)
      const v = yield* startVerifier({ pki, db, poller: owningPoller().layer })
      const identical: Array<string> = []
      const differing: Array<string> = []
      for (const rec of records) {
        const q = rec.request
        const path = q.query ? `${q.path}?${new URLSearchParams(q.query).toString()}` : q.path
        const answered: VParsed = yield* vcall(pki, v, {
          method: q.method,
          path,
          who: q.client_cert === "foreign" ? "foreign" : q.client_cert === "none" ? "none" : "admin",
          ...(q.body === undefined ? {} : typeof q.body === "string" ? { body: q.body } : { json: q.body })
        })
        const ours: VParsed = answered.json === undefined ? answered : { ...answered, json: withoutAdditions(answered.json) }
        const volatile = rec.volatile ?? []
        const theirsBody = withoutVolatile(rec.response.body, volatile)
        const same = ours.status === rec.response.status &&
          mediaType(ours.contentType) === mediaType(rec.response.content_type) &&
          JSON.stringify(withoutVolatile(ours.json ?? ours.body, volatile)) === JSON.stringify(theirsBody)
        const difference = DIFFERENCES[rec.id]
        if (same) {
          expect(difference, `${rec.id} is identical: remove it from DIFFERENCES`).toBeUndefined()
          identical.push(rec.id)
          continue
        }
        expect(difference, `${rec.id} differs and is not a reviewed difference: ${ours.status} ${ours.body}`).toBeDefined()
        differing.push(rec.id)
        // what attest answers instead: the envelope, with the stated status, text and results
        expect(ours.status, rec.id).toBe(difference!.status ?? rec.response.status)
        if (difference!.listOf !== undefined) {
          expect(mediaType(ours.contentType), rec.id).toBe("application/vnd.api+json")
          const data = (ours.json as { data: Array<{ type: string }> }).data
          expect(Array.isArray(data) && data.every((r) => r.type === difference!.listOf), rec.id).toBe(true)
          continue
        }
        if (difference!.jsonApi === true) {
          // API 3.0 answers in JSON:API (src/http/jsonapi.ts)
          expect(mediaType(ours.contentType), rec.id).toBe("application/vnd.api+json")
          expect((ours.json as { errors: Array<{ detail: string }> }).errors[0]!.detail, rec.id).toMatch(difference!.text)
          continue
        }
        const env = withoutVolatile(ours.json, volatile) as { code: number; status: string; results: unknown }
        expect(mediaType(ours.contentType), rec.id).toBe("application/json")
        expect(env.code, rec.id).toBe(ours.status)
        expect(env.status, rec.id).toMatch(difference!.text)
        if (difference!.results !== undefined) {
          expect(env.results, rec.id).toEqual(difference!.results((theirsBody as { results: unknown }).results))
        }
      }
      console.log(`verifier wire replay (${backend}): ${identical.length} of ${records.length} exchanges identical, ${differing.length} reviewed differences`)
      expect(records.length).toBe(151)
      expect(identical.length + differing.length).toBe(records.length)
      expect(differing.length).toBe(Object.keys(DIFFERENCES).length)
    }))
})
