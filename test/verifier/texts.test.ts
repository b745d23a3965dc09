/**
 * Every status text of the recorded verifier exchanges comes out of `texts.ts` (the one table the
 * HTTP layer answers from), and the status results rendered from a stored agent are what Keylime
 * answered in the recorded GETs, volatile fields included.
 */
import { describe, expect, it } from "@effect/vitest"
import { parseVersion } from "../../src/http/versions.js"
import { pythonJsonDumps } from "../../src/attestation/pythonJson.js"
import { pythonExpectingValueAt } from "../../src/attestation/pythonJsonErrors.js"
import { encAlgForVersion, intervalText, renderAgentStatus } from "../../src/verifier/domain/agentStatus.js"
import type { AgentView } from "../../src/verifier/domain/repo/rows.js"
import { attestationStatus } from "../../src/attestation/states.js"
import { pythonRepr, VerifierAction, VerifierText as T } from "../../src/verifier/domain/texts.js"
import { record, verifierRecords } from "./support.js"

const AGENT_A = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"

/** The text attest's table gives for each recorded refusal. */
const EXPECTED: ReadonlyArray<readonly [string, string]> = [
  ...(["tpm_policy", "metadata", "ima_sign_verification_keys", "revocation_key", "accept_tpm_hash_algs", "accept_tpm_encryption_algs", "accept_tpm_signing_algs", "ak_tpm", "mb_policy_name", "mb_policy"] as const)
    .map((f) => [`ver-add-missing-${f.replaceAll("_", "-")}`, T.missingField(f)] as const),
  ["ver-add-empty-object", T.missingField("tpm_policy")],
  ["ver-add-missing-runtime-policy", T.runtimePolicyNone],
  ["ver-add-runtime-policy-null", T.runtimePolicyNone],
  ["ver-add-missing-mtls-cert", T.mtlsRequired],
  ["ver-add-mtls-disabled", T.mtlsRequired],
  ["ver-add-unknown-policy-name", T.imaPolicyNotFound("nope")],
  ["ver-add-bad-port", T.portNotInteger("x")],
  ["ver-add-duplicate", T.agentExists(AGENT_A)],
  ["ver-get-unknown", T.agentNotFound],
  ["ver-delete-unknown", T.agentNotFound],
  ["ver-identity-unknown-agent", T.agentNotFound],
  ["ver-allowlist-add-duplicate", T.runtimePolicyExists("rt1")],
  ["ver-allowlist-add-invalid-schema", T.runtimePolicyMalformatted("'meta' is a required property")],
  ["ver-allowlist-get-unknown", T.runtimePolicyNotFound("nope")],
  ["ver-allowlist-delete-unknown", T.runtimePolicyNotFound("nope")],
  ["ver-allowlist-update-unknown", T.runtimePolicyUpdateUnknown("nope")],
  ["ver-add-policy-name-conflict", T.imaPolicyExists("rt1")],
  ["ver-allowlist-delete-in-use", T.runtimePolicyInUse("d432fbb3-d2f1-4a97-9ef7-75bd81c00013")],
  ["ver-mbpolicy-add-duplicate", T.mbPolicyExists("mb1")],
  ["ver-mbpolicy-get-unknown", T.mbPolicyNotFound("nope")],
  ["ver-mbpolicy-delete-unknown", T.mbPolicyNotFound("nope")],
  ["ver-mbpolicy-update-unknown", T.mbPolicyUpdateUnknown("nope")],
  ...(["agent_uuid", "quote", "nonce", "hash_alg"] as const).map((p) => [`ver-identity-missing-${p.replace("_", "-")}`, T.missingQueryParameter(p)] as const),
  ["ver-evidence-missing-quote", T.badRequest],
  ["ver-evidence-missing-type", T.missingParameter("type")],
  ["ver-evidence-missing-data", T.missingParameter("data")],
  ["ver-evidence-type-foo", T.invalidEvidenceType],
  ["ver-stop-unknown", T.noRow],
  ["ver-reactivate-unknown", T.noRow],
  ["ver-stop-unknown-v25", T.noRow],
  ["ver-add-runtime-policy-not-json", T.jsonExpectingValue(1, 1, 0)],
  ["ver-add-unknown-mb-policy-name", T.mbPolicyNotFoundOnAdd("nope-mb")],
  ["ver-add-nocert", T.adminRequired(VerifierAction.createAgent)],
  ["ver-get-nocert", T.authenticationRequired(VerifierAction.readAgent)],
  ["ver-list-nocert", T.adminRequired(VerifierAction.listAgents)],
  ["ver-allowlist-nocert", T.adminRequired(VerifierAction.listRuntimePolicies)],
  ["ver-stop-nocert", T.adminRequired(VerifierAction.stopAgent)],
  ["ver-delete-nocert", T.adminRequired(VerifierAction.deleteAgent)],
  ["ver-evidence-missing-tpm-ek", T.missingEvidenceParameter("tpm_ek")],
  ["ver-evidence-no-policy", T.missingEvidencePolicy]
]

/** The status, 403 detail, or first default.* failure message of a recorded answer. */
const recordedTexts = (id: string): ReadonlyArray<string> => {
  const body = record(id).response.body as {
    status?: string
    errors?: ReadonlyArray<{ detail: string }>
    results?: { failures?: ReadonlyArray<{ type: string; context: { message: string } }> }
  }
  return [
    ...(body.status === undefined ? [] : [body.status]),
    ...(body.errors ?? []).map((e) => e.detail),
    ...(body.results?.failures ?? []).filter((f) => /^(default|tee_attestation)\./.test(f.type)).map((f) => f.context.message)
  ]
}

/**
 * Recorded texts attest departs from on purpose (each is a DIFFERENCE of wire.test.ts, with why),
 * and attest's text instead.
 */
const DEPARTED: ReadonlyArray<readonly [string, string, string]> = [
  ["ver-add-bad-id", "agent_id not not valid", T.badAgentId],
  ["ver-get-bad-id", "agent_id not not valid", T.badAgentId]
]

describe("verifier texts", () => {
  for (const [id, theirs, ours] of DEPARTED) {
    it(`departs from Keylime's text of ${id} on purpose`, () => {
      expect([recordedTexts(id), ours]).toEqual([[theirs], "agent_id not valid: an agent id must be 1-255 characters of letters, digits, '-', '_' or '.'"])
    })
  }

  for (const [id, text] of EXPECTED) {
    it(`gives Keylime's text of ${id}`, () => {
      expect(recordedTexts(id)).toContain(text)
    })
  }

  it("covers every refusal text of the 151 recorded exchanges (verify/identity reasons aside: the evaluator words them)", () => {
    const ours = new Set<string>([...EXPECTED.map(([, t]) => t), ...DEPARTED.map(([, theirs]) => theirs), T.missingEvidenceParameter("quote"), T.missingEvidenceParameter("nonce"),
      T.missingEvidenceParameter("hash_alg"), T.missingEvidenceParameter("tpm_ak"), T.missingEvidenceParameter("tee-evidence")])
    expect(verifierRecords.length).toBe(151)
    const missing = verifierRecords.flatMap((r) =>
      typeof r.response.body === "object" && r.response.body !== null
        ? recordedTexts(r.id).filter((t) => t !== T.success && t !== T.created && !ours.has(t)).map((t) => `${r.id}: ${t}`)
        : []
    )
    expect(missing).toEqual([])
  })

  it("quotes values as Python's repr does", () => {
    expect(pythonRepr("x")).toBe("'x'")
    expect(pythonRepr("it's")).toBe("\"it's\"")
    expect(pythonRepr("a'b\"c\\\n")).toBe("'a\\'b\"c\\\\\\n'")
  })

  it("places json.loads' 'Expecting value' where Python does, and only where no JSON value starts", () => {
    expect(pythonExpectingValueAt("not json")).toEqual({ line: 1, column: 1, char: 0 })
    expect(pythonExpectingValueAt("")).toEqual({ line: 1, column: 1, char: 0 })
    expect(pythonExpectingValueAt("  \n  x")).toEqual({ line: 2, column: 3, char: 5 })
    expect(pythonExpectingValueAt("nul")).toEqual({ line: 1, column: 1, char: 0 })
    for (const ok of ["{", "[1", "\"a", "-1", "null", "true", "NaN", "7x"]) expect(pythonExpectingValueAt(ok), ok).toBeUndefined()
  })

  it("writes JSON as Python's json.dumps does", () => {
    expect(pythonJsonDumps({ a: [1, "é", null, true], b: { c: 1.5 } })).toBe("{\"a\": [1, \"\\u00e9\", null, true], \"b\": {\"c\": 1.5}}")
  })
})

/** An agent view as the repository returns it, from a recorded GET's results. */
const viewOf = (results: Record<string, unknown>, extra: Partial<AgentView> = {}): AgentView => ({
  agent_id: AGENT_A,
  verifier_id: results["verifier_id"] as string,
  operational_state: results["operational_state"] as number,
  v: results["v"] as string,
  ip: results["ip"] as string,
  port: results["port"] as number,
  tpm_policy: results["tpm_policy"] as string,
  vtpm_policy: null,
  meta_data: results["meta_data"] as string,
  ak_tpm: "",
  mtls_cert: null,
  runtime_policy_name: AGENT_A,
  mb_policy_name: AGENT_A,
  ima_sign_verification_keys: "",
  revocation_key: undefined as never,
  accept_tpm_hash_algs: results["accept_tpm_hash_algs"] as Array<string>,
  accept_tpm_encryption_algs: results["accept_tpm_encryption_algs"] as Array<string>,
  accept_tpm_signing_algs: results["accept_tpm_signing_algs"] as Array<string>,
  supported_version: "2.2",
  hash_alg: results["hash_alg"] as string,
  enc_alg: results["enc_alg"] as string,
  sign_alg: results["sign_alg"] as string,
  severity_level: results["severity_level"] as number | null,
  last_event_id: results["last_event_id"] as string | null,
  last_event_message: null,
  attestation_count: results["attestation_count"] as number,
  last_received_quote: results["last_received_quote"] as number,
  last_successful_attestation: results["last_successful_attestation"] as number,
  evaluation_state: null,
  v_delivered: false,
  retry_count: 0,
  next_poll_at: null,
  generation: 0,
  owner_runner: null,
  created_at: 0,
  updated_at: 0,
  runtime_policy_checksum: "",
  runtime_policy_has_policy: results["has_runtime_policy"] === 1,
  runtime_policy_digest_count: 0,
  mb_policy_checksum: "",
  mb_policy_has_policy: results["has_mb_refstate"] === 1,
  mb_policy_key_count: 0,
  ...extra
})

describe("agent status rendering", () => {
  const settings = { verifierIp: "127.0.0.1", verifierPort: 8881, quoteInterval: 2 }
  for (const id of ["ver-get-ok", "ver-get-ok-v25", "ver-get-b", "ver-get-after-retries", "ver-get-after-stop"]) {
    it(`renders exactly what Keylime answered in ${id}`, () => {
      const r = record(id)
      const results = (r.response.body as { results: Record<string, unknown> }).results
      const version = parseVersion(/^\/v(\d+\.\d+)\//.exec(r.request.path)![1]!)!
      expect(renderAgentStatus(viewOf(results), version, settings)).toEqual(results)
    })
  }

  it("renders 2.0–2.4 as the earlier variant: lengths, vtpm_policy, enc_alg without bit length, no attestation_status", () => {
    const results = (record("ver-get-ok").response.body as { results: Record<string, unknown> }).results
    const view = viewOf(results, { enc_alg: "rsa2048", vtpm_policy: "{}", runtime_policy_digest_count: 3, mb_policy_key_count: 2 })
    const shown = renderAgentStatus(view, parseVersion("2.1")!, settings) as Record<string, unknown>
    expect(Object.keys(shown)).toEqual([
      "operational_state", "v", "ip", "port", "tpm_policy", "vtpm_policy", "meta_data", "allowlist_len", "mb_refstate_len",
      "accept_tpm_hash_algs", "accept_tpm_encryption_algs", "accept_tpm_signing_algs", "hash_alg", "enc_alg", "sign_alg",
      "verifier_id", "verifier_ip", "verifier_port", "severity_level", "last_event_id", "attestation_count",
      "last_received_quote", "last_successful_attestation"
    ])
    expect([shown["allowlist_len"], shown["mb_refstate_len"], shown["enc_alg"]]).toEqual([3, 2, "rsa"])
  })

  it("normalises enc_alg per version and spells intervals as Keylime", () => {
    const v25 = parseVersion("2.5")!
    const v24 = parseVersion("2.4")!
    expect(["rsa", "ecc", "rsa3072", "ecc384", ""].map((a) => encAlgForVersion(a, v25))).toEqual(["rsa2048", "ecc256", "rsa3072", "ecc384", ""])
    expect(["rsa", "rsa2048", "ecc256", "ecc"].map((a) => encAlgForVersion(a, v24))).toEqual(["rsa", "rsa", "ecc", "ecc"])
    expect([intervalText(2), intervalText(10), intervalText(0.5)]).toEqual(["2s", "10s", "0.5s"])
  })

  it("attestation_status: PASS in 3-6 (even before the first attestation), FAIL in 7, 9, 10, PENDING otherwise", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(attestationStatus)).toEqual([
      "PENDING", "PENDING", "PENDING", "PASS", "PASS", "PASS", "PASS", "FAIL", "PENDING", "FAIL", "FAIL"
    ])
  })
})
