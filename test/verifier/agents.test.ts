/**
 * The Agents service end to end on SQLite and PostgreSQL: every creation-body variant is stored
 * with its policies, conflicts and unknown names are refused with Keylime's facts, every bad field
 * is refused naming it with NOTHING stored, and show/list/bulk/delete/stop/reactivate follow
 * keylime-wire.md §1.4 (with attest's reactivate-after-stop), telling the loop through PollerControl.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted, Schema, TestClock } from "effect"
import { bulkInSchemaOrder, VerifierAgentBulk } from "../../schemas/Verifier.js"
import * as crypto from "node:crypto"
import { parseVersion } from "../../src/http/versions.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { Policies } from "../../src/verifier/domain/policy/Policies.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import { OperationalState } from "../../src/attestation/states.js"
import { invalidAgentBodyText, invalidRuntimePolicyText, VerifierText } from "../../src/verifier/domain/texts.js"
import { testDatabase } from "../support/db.js"
import { readVectorText } from "../support/vectors.js"
import { backends, record, recordedPolicyBase64, recordingPoller, snapshotTables, validBody, verifierLayer } from "./support.js"

const v26 = parseVersion("2.6")!
const encodeBulk = Schema.encodeUnknownSync(VerifierAgentBulk)
const v25 = parseVersion("2.5")!
const v21 = parseVersion("2.1")!
const b64 = (s: string) => Buffer.from(s).toString("base64")

/** Without the fields Keylime's own capture marks as varying with polling. */
const stable = (status: unknown) => {
  const {
    operational_state: _1,
    attestation_count: _2,
    last_received_quote: _3,
    last_successful_attestation: _4,
    attestation_status: _5,
    severity_level: _6,
    last_event_id: _7,
    // attest's pull-agent additions (issue 24), checked on their own
    seconds_since_verified_quote: _8,
    owner_runner: _9,
    ...rest
  } = status as Record<string, unknown>
  return rest
}

const ekOfVector = (record("ver-evidence-ok-runtime-policy").request.body as { data: { tpm_ek: string } }).data.tpm_ek
const rsaKeyPem = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
const ecKeyPem = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()

type Mutation = (b: Record<string, unknown>) => unknown
const without = (...keys: Array<string>): Mutation => (b) => {
  for (const k of keys) delete b[k]
  return b
}
const set = (key: string, value: unknown): Mutation => (b) => ({ ...b, [key]: value })

/** [case, mutation, refused field, status text]. */
const BAD_FIELDS: ReadonlyArray<readonly [string, Mutation, string, string]> = [
  ["empty object", () => ({}), "tpm_policy", "Exception error: 'tpm_policy'"],
  ["no tpm_policy", without("tpm_policy"), "tpm_policy", "Exception error: 'tpm_policy'"],
  ["no metadata", without("metadata"), "metadata", "Exception error: 'metadata'"],
  ["no ima_sign_verification_keys", without("ima_sign_verification_keys"), "ima_sign_verification_keys", "Exception error: 'ima_sign_verification_keys'"],
  ["no revocation_key", without("revocation_key"), "revocation_key", "Exception error: 'revocation_key'"],
  ["no accept_tpm_hash_algs", without("accept_tpm_hash_algs"), "accept_tpm_hash_algs", "Exception error: 'accept_tpm_hash_algs'"],
  ["no accept_tpm_encryption_algs", without("accept_tpm_encryption_algs"), "accept_tpm_encryption_algs", "Exception error: 'accept_tpm_encryption_algs'"],
  ["no accept_tpm_signing_algs", without("accept_tpm_signing_algs"), "accept_tpm_signing_algs", "Exception error: 'accept_tpm_signing_algs'"],
  ["no ak_tpm", without("ak_tpm"), "ak_tpm", "Exception error: 'ak_tpm'"],
  ["no mb_policy_name", without("mb_policy_name"), "mb_policy_name", "Exception error: 'mb_policy_name'"],
  ["no mb_policy", without("mb_policy"), "mb_policy", "Exception error: 'mb_policy'"],
  ["no runtime_policy", without("runtime_policy"), "runtime_policy", VerifierText.runtimePolicyNone],
  ["null runtime_policy", set("runtime_policy", null), "runtime_policy", VerifierText.runtimePolicyNone],
  ["no mtls_cert", without("mtls_cert"), "mtls_cert", "mTLS certificate for agent is required!"],
  ["mtls_cert disabled", set("mtls_cert", "disabled"), "mtls_cert", "mTLS certificate for agent is required!"],
  ["no cloudagent_ip", without("cloudagent_ip"), "cloudagent_ip", "Exception error: 'cloudagent_ip'"],
  ["port 'x'", set("cloudagent_port", "x"), "cloudagent_port", "Exception error: invalid literal for int() with base 10: 'x'"],
  ["port 70000", set("cloudagent_port", 70000), "cloudagent_port", "cloudagent_port must be a port number 1-65535"],
  ["port 1.5", set("cloudagent_port", 1.5), "cloudagent_port", "cloudagent_port must be a port number 1-65535"],
  ["ip with spaces", set("cloudagent_ip", "bad host"), "cloudagent_ip", "cloudagent_ip is not an IP address or host name"],
  ["tpm_policy not JSON", set("tpm_policy", "mask=0x400"), "tpm_policy", "tpm_policy must be a JSON object as a string, such as \"{\\\"mask\\\": \\\"0x400\\\"}\""],
  ["tpm_policy without mask", set("tpm_policy", "{\"10\": []}"), "tpm_policy", "tpm_policy has no \"mask\" (the hex PCR selection, such as \"0x400\")"],
  ["tpm_policy bad mask", set("tpm_policy", "{\"mask\": \"400\"}"), "tpm_policy", "tpm_policy \"mask\" must be a hex string of PCRs 0-23 such as \"0x400\", got \"400\""],
  ["tpm_policy PCR 24", set("tpm_policy", "{\"mask\": \"0x1\", \"24\": []}"), "tpm_policy", "tpm_policy has key \"24\": keys are \"mask\" and PCR numbers 0-23"],
  ["tpm_policy values not hex", set("tpm_policy", "{\"mask\": \"0x1\", \"0\": [\"zz\"]}"), "tpm_policy", "tpm_policy PCR 0 must map to a list of hex values"],
  ["metadata not JSON", set("metadata", "cert"), "metadata", "metadata must be a string holding a JSON object, such as \"{}\""],
  ["metadata a number", set("metadata", 3), "metadata", "metadata must be a string holding a JSON object, such as \"{}\""],
  ["ima keys not a keyring", set("ima_sign_verification_keys", "[1]"), "ima_sign_verification_keys", "ima_sign_verification_keys must be \"\" or a keyring JSON object {\"meta\": {\"version\": 1}, \"keyids\": [...], \"pubkeys\": [PEM, ...]}"],
  ["revocation_key not a key", set("revocation_key", "key"), "revocation_key", "revocation_key must be \"\" or an RSA private key in PEM (it signs revocation messages)"],
  ["revocation_key an EC key", set("revocation_key", ecKeyPem), "revocation_key", "revocation_key must be \"\" or an RSA private key in PEM (it signs revocation messages)"],
  ["empty hash algs", set("accept_tpm_hash_algs", []), "accept_tpm_hash_algs", "accept_tpm_hash_algs must be a non-empty list of algorithm names"],
  ["unknown hash alg", set("accept_tpm_hash_algs", ["md5"]), "accept_tpm_hash_algs", "accept_tpm_hash_algs names an unknown algorithm \"md5\" (known: sha1, sha256, sha384, sha512, sm3_256)"],
  ["signing algs a string", set("accept_tpm_signing_algs", "rsassa"), "accept_tpm_signing_algs", "accept_tpm_signing_algs must be a non-empty list of algorithm names"],
  ["ak_tpm not base64", set("ak_tpm", "not base64!"), "ak_tpm", "ak_tpm must be base64 of the AK's TPM2B_PUBLIC"],
  ["ak_tpm garbage", set("ak_tpm", b64("garbage")), "ak_tpm", "ak_tpm is not a TPM2B_PUBLIC"],
  ["ak_tpm is an EK", set("ak_tpm", ekOfVector), "ak_tpm", "ak_tpm is not a restricted signing key with a usable public key"],
  ["v too short", set("v", b64("short")), "v", "v must be base64 of 32 bytes"],
  ["mtls_cert garbage", set("mtls_cert", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"), "mtls_cert", "mtls_cert must be the agent's certificate in PEM, \"disabled\" or null"],
  ["supported_version garbage", set("supported_version", "two"), "supported_version", "supported_version must be an API version such as \"2.2\""],
  ["runtime_policy_name with a space", set("runtime_policy_name", "my policy"), "runtime_policy_name", "runtime_policy_name must be 1-255 characters of letters, digits, '-', '_' or '.'"],
  ["runtime_policy not base64", set("runtime_policy", "%%%"), "runtime_policy", "runtime_policy is not valid base64 (base64 of the policy JSON, \"\" for none)"],
  ["runtime_policy not JSON", set("runtime_policy", "bm90IGpzb24="), "runtime_policy", "Exception error: Expecting value: line 1 column 1 (char 0)"],
  ["runtime_policy_sig without key", (b) => ({ ...b, runtime_policy: recordedPolicyBase64(), runtime_policy_sig: b64("sig") }), "runtime_policy_sig", "runtime_policy_sig needs runtime_policy_key (they must be given together)"],
  ["mb_policy not JSON", set("mb_policy", "{not json"), "mb_policy", "mb_policy is not JSON"],
  ["mb_policy a list", set("mb_policy", "[1]"), "mb_policy", "mb_policy must be a JSON object (the reference state)"],
  ["a JSON list body", () => [1, 2], "body", "body must be a JSON object"]
]

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`verifier Agents on ${backend}`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, any>, poller = recordingPoller()) =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        return yield* effect.pipe(Effect.provide(verifierLayer(db, {}, poller.layer)))
      })

    it.scoped("adds the body keylime_tenant sends: START, empty policies named after the agent, the loop started, GET as Keylime renders it", () => {
      const poller = recordingPoller()
      return run(Effect.gen(function*() {
        const agents = yield* Agents
        const id = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"
        yield* agents.add(id, validBody())
        expect(poller.calls).toEqual([{ op: "start", agentId: id }])
        const shown = yield* agents.show(id, v26)
        const recorded = record("ver-get-ok").response.body as { results: unknown }
        expect(stable(shown)).toEqual(stable(recorded.results))
        expect(shown).toMatchObject({ operational_state: 1, attestation_status: "PENDING", severity_level: null, attestation_count: 0 })
        // never verified: counted from its creation; no runner took it (single-process mode)
        yield* TestClock.adjust("90 seconds")
        const later = (yield* agents.show(id, v26)) as Record<string, unknown>
        expect({ seconds: later["seconds_since_verified_quote"], owner: later["owner_runner"] }).toEqual({ seconds: 90, owner: null })
        expect(yield* (yield* Policies).listRuntime()).toEqual({ "runtimepolicy names": [id] })
        expect(yield* (yield* Policies).listMb()).toEqual({ "mbpolicy names": [id] })
        const stored = yield* (yield* Policies).getRuntime(id)
        expect(stored).toEqual({
          name: id,
          tmp_policy: null,
          runtime_policy:
            "{\"meta\": {\"version\": 1, \"generator\": 1}, \"release\": 0, \"digests\": {}, \"excludes\": [], \"keyrings\": {}, \"ima\": {\"ignored_keyrings\": [], \"log_hash_alg\": \"sha1\", \"dm_policy\": null}, \"ima-buf\": {}, \"verification-keys\": \"\"}"
        })
        const again = yield* Effect.flip(agents.add(id, validBody()))
        expect(again._tag).toBe("AgentAlreadyExists")
        expect(VerifierText.agentExists(id)).toBe((record("ver-add-duplicate").response.body as { status: string }).status)
      }), poller)
    })

    it.scoped("a push agent beside pull agents (attestation_model): no agent certificate, never polled, reactivated and deleted as a push agent", () => {
      const poller = recordingPoller()
      return run(Effect.gen(function*() {
        const agents = yield* Agents
        const sql = yield* SqlClient.SqlClient
        const id = "d432fbb3-d2f1-4a97-9ef7-75bd81c00099"
        const { mtls_cert: _, ...withoutCert } = validBody() as Record<string, unknown>
        const refused = yield* Effect.flip(agents.add(id, { ...withoutCert, attestation_model: "pushed" }))
        expect([refused._tag, (refused as { field?: string }).field]).toEqual(["InvalidAgentBody", "attestation_model"])
        const pullWithoutCert = yield* Effect.flip(agents.add(id, withoutCert))
        expect((pullWithoutCert as { field?: string }).field).toEqual("mtls_cert")
        yield* agents.add(id, { ...withoutCert, attestation_model: "push" })
        const pushRows = yield* sql<{ accept_attestations: unknown }>`SELECT accept_attestations FROM push_agents WHERE agent_id = ${id}`
        expect(pushRows.map((r) => Number(r.accept_attestations))).toEqual([1])
        // the bulk status shows its push status, as GET of the agent does
        yield* sql`UPDATE push_agents SET attestation_count = 3 WHERE agent_id = ${id}`
        const bulk = (yield* agents.bulk(v26)) as Record<string, { attestation_count: number }>
        // the route answers the bulk status as it is: byte for byte what its schema would encode
        expect(JSON.stringify(bulkInSchemaOrder(bulk as VerifierAgentBulk))).toEqual(JSON.stringify(encodeBulk(bulk)))
        expect([bulk[id]?.attestation_count, ((yield* agents.show(id, v26)) as { attestation_count: number }).attestation_count]).toEqual([3, 3])
        yield* agents.reactivate(id)
        expect(poller.calls).toEqual([])
        expect(yield* agents.remove(id)).toEqual("deleted")
        expect(poller.calls).toEqual([{ op: "stop", agentId: id }])
      }), poller)
    })

    it.scoped("adds with an inline runtime policy (stored under the agent id, has_runtime_policy 1) and with one by name", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        const policies = yield* Policies
        const inlineBody = record("ver-add-v25-ok").request.body as Record<string, unknown>
        yield* agents.add("agent-b", inlineBody)
        expect(yield* agents.show("agent-b", v25)).toMatchObject({ has_runtime_policy: 1, has_mb_refstate: 0 })
        const stored = yield* policies.getRuntime("agent-b")
        expect(stored.runtime_policy).toBe(Buffer.from(inlineBody["runtime_policy"] as string, "base64").toString())

        yield* policies.addRuntime("rt1", { runtime_policy: recordedPolicyBase64() })
        yield* agents.add("agent-n", { ...validBody(), runtime_policy_name: "rt1" })
        expect(Option.getOrThrow(yield* (yield* AgentRepo).find("agent-n")).runtime_policy_name).toBe("rt1")
        expect(yield* agents.show("agent-n", v26)).toMatchObject({ has_runtime_policy: 1 })
        expect((yield* policies.listRuntime())["runtimepolicy names"]).toEqual(["agent-b", "rt1"])
        const inUse = yield* Effect.flip(policies.deleteRuntime("rt1"))
        expect(inUse).toMatchObject({ _tag: "RuntimePolicyInUse", agentId: "agent-n" })
        expect(VerifierText.runtimePolicyInUse("d432fbb3-d2f1-4a97-9ef7-75bd81c00013")).toBe(
          (record("ver-allowlist-delete-in-use").response.body as { status: string }).status
        )
      })))

    it.scoped("adds the 2.1-era body (allowlist, vtpm_policy, no mb fields) and the spec's 2.5 body with mb_refstate", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        const policies = yield* Policies
        const { runtime_policy: _r, runtime_policy_name: _n, runtime_policy_key: _k, mb_policy: _m, mb_policy_name: _mn, ...rest } = validBody()
        const policyText = Buffer.from(recordedPolicyBase64(), "base64").toString()
        yield* agents.add("legacy-1", { ...rest, vtpm_policy: "{\"mask\": \"0x0\"}", allowlist: policyText })
        expect(yield* agents.show("legacy-1", v21)).toMatchObject({ vtpm_policy: "{\"mask\": \"0x0\"}", allowlist_len: 3, mb_refstate_len: 0 })
        expect((yield* policies.getRuntime("legacy-1")).runtime_policy).toBe(policyText)

        // the old JSON allowlist ({"hashes": …}) becomes a v1 policy
        const old = JSON.stringify({ meta: { version: 1 }, hashes: { "/bin/sh": ["AA".repeat(32)] } })
        yield* agents.add("legacy-2", { ...rest, vtpm_policy: "", allowlist: old })
        expect(yield* agents.show("legacy-2", v26)).toMatchObject({ has_runtime_policy: 1 })
        expect(JSON.parse((yield* policies.getRuntime("legacy-2")).runtime_policy).digests).toEqual({ "/bin/sh": ["aa".repeat(32)] })

        const refstate = JSON.stringify({ has_secureboot: false, kernels: [] })
        yield* agents.add("spec-25", { ...rest, runtime_policy: "", mb_refstate: refstate })
        expect(yield* agents.show("spec-25", v26)).toMatchObject({ has_mb_refstate: 1, has_runtime_policy: 0 })
        expect(yield* agents.show("spec-25", v21)).toMatchObject({ mb_refstate_len: 2, allowlist_len: 0 })
        yield* agents.add("spec-25-null", { ...rest, runtime_policy: "", mb_refstate: "null" })
        expect((yield* policies.getMb("spec-25-null")).mb_policy).toBe(null)
      })))

    it.scoped("an inline mb policy is stored under its name; a name that exists or does not is refused as Keylime does", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        const policies = yield* Policies
        const refstate = JSON.stringify({ has_secureboot: false })
        yield* agents.add("mb-a", { ...validBody(), mb_policy: refstate, mb_policy_name: "fleet" })
        expect((yield* policies.getMb("fleet")).mb_policy).toBe(refstate)
        expect(yield* agents.show("mb-a", v26)).toMatchObject({ has_mb_refstate: 1 })
        yield* agents.add("mb-b", { ...validBody(), mb_policy_name: "fleet" })
        expect(Option.getOrThrow(yield* (yield* AgentRepo).find("mb-b")).mb_policy_name).toBe("fleet")

        const before = yield* snapshotTables
        const exists = yield* Effect.flip(agents.add("mb-c", { ...validBody(), mb_policy: refstate, mb_policy_name: "fleet" }))
        expect(exists).toMatchObject({ _tag: "MbPolicyExists", name: "fleet" })
        const unknown = yield* Effect.flip(agents.add("mb-d", { ...validBody(), mb_policy_name: "nope-mb" }))
        expect(unknown).toMatchObject({ _tag: "MbPolicyNotFound", name: "nope-mb" })
        expect(VerifierText.mbPolicyNotFoundOnAdd("nope-mb")).toBe((record("ver-add-unknown-mb-policy-name").response.body as { status: string }).status)
        expect(yield* snapshotTables).toEqual(before)
      })))

    it.scoped("a runtime policy name that exists with an inline policy is 409, an unknown one without a policy 404, and nothing is stored", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        yield* (yield* Policies).addRuntime("rt1", { runtime_policy: recordedPolicyBase64() })
        const before = yield* snapshotTables
        const conflict = yield* Effect.flip(agents.add("x1", record("ver-add-policy-name-conflict").request.body))
        expect(conflict).toMatchObject({ _tag: "RuntimePolicyExists", name: "rt1" })
        expect(VerifierText.imaPolicyExists("rt1")).toBe((record("ver-add-policy-name-conflict").response.body as { status: string }).status)
        const unknown = yield* Effect.flip(agents.add("x2", record("ver-add-unknown-policy-name").request.body))
        expect(unknown).toMatchObject({ _tag: "RuntimePolicyNotFound", name: "nope" })
        expect(VerifierText.imaPolicyNotFound("nope")).toBe((record("ver-add-unknown-policy-name").response.body as { status: string }).status)
        expect(yield* snapshotTables).toEqual(before)
      })))

    it.scoped("refuses every bad field naming it, with Keylime's text where recorded, and stores nothing", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        yield* agents.add("kept", validBody())
        const before = yield* snapshotTables
        for (const [name, mutate, field, text] of BAD_FIELDS) {
          const error = yield* Effect.flip(agents.add("refused-agent", mutate(validBody())))
          expect(error._tag, name).toBe("InvalidAgentBody")
          if (error._tag !== "InvalidAgentBody") continue
          expect(error.field, name).toBe(field)
          expect(invalidAgentBodyText(error).startsWith(text), `${name}: ${invalidAgentBodyText(error)}`).toBe(true)
          expect(error.agentId, name).toBe("refused-agent")
        }
        const badId = yield* Effect.flip(agents.add("bad id!", validBody()))
        expect(badId._tag).toBe("InvalidAgentId")
        expect(yield* snapshotTables).toEqual(before)
      })))

    it.scoped("refuses an inline policy that fails the schema (Keylime's jsonschema words) and a DSSE policy without its key", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        const before = yield* snapshotTables
        const schema = yield* Effect.flip(agents.add("p1", { ...validBody(), runtime_policy: b64("{\"digests\": \"nope\"}") }))
        expect(schema._tag).toBe("InvalidRuntimePolicy")
        if (schema._tag === "InvalidRuntimePolicy") {
          expect(invalidRuntimePolicyText(schema)).toBe((record("ver-allowlist-add-invalid-schema").response.body as { status: string }).status)
        }
        const signed = readVectorText("keylime", "test", "data", "runtime-policy-test-signed.json")
        const unsigned = yield* Effect.flip(agents.add("p2", { ...validBody(), runtime_policy: b64(signed) }))
        expect(unsigned).toMatchObject({ _tag: "InvalidRuntimePolicy", problem: "key_required", field: "runtime_policy_key" })
        expect(yield* snapshotTables).toEqual(before)
        // with its key the signed policy is verified and its payload stored
        const key = readVectorText("keylime", "test", "data", "runtime-policy-pubkey.pub")
        yield* agents.add("p3", { ...validBody(), runtime_policy: b64(signed), runtime_policy_key: b64(key) })
        const stored = yield* (yield* Policies).getRuntime("p3")
        expect(stored.runtime_policy.trim()).toBe(readVectorText("keylime", "test", "data", "runtime-policy-test.json").trim())
      })))

    it.scoped("lists nested ids (filtered by verifier), renders bulk per version and enc_alg with or without its bit length", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        const repo = yield* AgentRepo
        yield* agents.add("l1", validBody())
        yield* agents.add("l2", { ...validBody(), revocation_key: rsaKeyPem, v: null, supported_version: "2.5" })
        expect(Redacted.value(Option.getOrThrow(yield* repo.find("l2")).revocation_key)).toBe(rsaKeyPem)
        expect(yield* agents.list()).toEqual({ uuids: [["l1"], ["l2"]] })
        expect(yield* agents.list("default")).toEqual({ uuids: [["l1"], ["l2"]] })
        expect(yield* agents.list("other")).toEqual({ uuids: [] })
        yield* repo.recordVerdict("l1", { generation: 0, ownerEpoch: 0 }, {
          operationalState: OperationalState.GET_QUOTE,
          valid: true,
          receivedAt: 1234,
          evaluationState: null,
          algorithms: { hashAlg: "sha256", encAlg: "rsa", signAlg: "rsassa" },
          nextPollAt: 1236
        })
        const bulk = yield* agents.bulk(v26)
        expect(Object.keys(bulk)).toEqual(["l1", "l2"])
        expect(bulk["l1"]).toMatchObject({ enc_alg: "rsa2048", attestation_status: "PASS", attestation_count: 1, last_successful_attestation: 1234 })
        // the route answers the bulk status as it is (no schema encode): byte for byte what the schema would give, each version's shape
        expect(JSON.stringify(bulkInSchemaOrder(bulk))).toEqual(JSON.stringify(encodeBulk(bulk)))
        const legacyBulk = yield* agents.bulk(v21)
        expect(legacyBulk["l1"]).toHaveProperty("allowlist_len")
        expect(JSON.stringify(bulkInSchemaOrder(legacyBulk))).toEqual(JSON.stringify(encodeBulk(legacyBulk)))
        const legacy = yield* agents.show("l1", v21)
        expect(legacy).toMatchObject({ enc_alg: "rsa", allowlist_len: 0 })
        expect(legacy).not.toHaveProperty("attestation_status")
        expect(yield* agents.bulk(v26, "other")).toEqual({})
      })))

    it.scoped("shows and deletes: unknown ids are not found, a bad id is refused", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        expect(yield* Effect.flip(agents.show("00000000-0000-0000-0000-00000000dead", v26))).toMatchObject({ _tag: "AgentNotFound" })
        expect(yield* Effect.flip(agents.show("bad id!", v26))).toMatchObject({ _tag: "InvalidAgentId" })
        expect(yield* Effect.flip(agents.remove("00000000-0000-0000-0000-00000000dead"))).toMatchObject({ _tag: "AgentNotFound" })
        expect(yield* Effect.flip(agents.stop("unknown"))).toMatchObject({ _tag: "AgentNotFound" })
        expect(yield* Effect.flip(agents.reactivate("unknown"))).toMatchObject({ _tag: "AgentNotFound" })
      })))

    it.scoped("delete: at once when this process owns the loop or the agent is stopped (its own policies go too); 202-TERMINATED when another process polls it", () => {
      const poller = recordingPoller(new Set(["owned"]))
      return run(Effect.gen(function*() {
        const agents = yield* Agents
        const repo = yield* AgentRepo
        yield* (yield* Policies).addRuntime("shared", { runtime_policy: recordedPolicyBase64() })
        yield* agents.add("owned", { ...validBody(), runtime_policy_name: "shared" })
        yield* agents.add("elsewhere", validBody())
        yield* agents.add("stopped", validBody())
        yield* agents.stop("stopped")
        poller.calls.length = 0

        expect(yield* agents.remove("owned")).toBe("deleted")
        expect(poller.calls).toEqual([{ op: "stop", agentId: "owned" }])
        expect(yield* (yield* RuntimePolicyRepo).exists("shared")).toBe(true)
        expect(yield* (yield* MbPolicyRepo).exists("owned")).toBe(false)

        expect(yield* agents.remove("elsewhere")).toBe("terminating")
        expect(Option.getOrThrow(yield* repo.find("elsewhere"))).toMatchObject({ operational_state: 8, generation: 1 })
        expect(yield* agents.remove("elsewhere")).toBe("terminating")
        expect(yield* Effect.flip(agents.reactivate("elsewhere"))).toMatchObject({ _tag: "AgentBeingDeleted" })
        expect(yield* Effect.flip(agents.stop("elsewhere"))).toMatchObject({ _tag: "AgentBeingDeleted" })

        expect(yield* agents.remove("stopped")).toBe("deleted")
        expect(yield* (yield* RuntimePolicyRepo).exists("stopped")).toBe(false)
        expect(yield* agents.list()).toEqual({ uuids: [["elsewhere"]] })
      }), poller)
    })

    it.scoped("delete refuses an agent of another verifier", () =>
      run(Effect.gen(function*() {
        const agents = yield* Agents
        yield* agents.add("mine", validBody())
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE verifier_agents SET verifier_id = 'other' WHERE agent_id = 'mine'`
        expect(yield* Effect.flip(agents.remove("mine"))).toMatchObject({ _tag: "AgentOfOtherVerifier", verifierId: "other" })
      })))

    it.scoped("stop → 10 and the loop cancelled; a loop verdict read before the stop loses; reactivate after stop polls again", () => {
      const poller = recordingPoller()
      return run(Effect.gen(function*() {
        const agents = yield* Agents
        const repo = yield* AgentRepo
        yield* agents.add("s1", validBody())
        const read = Option.getOrThrow(yield* repo.find("s1")).generation
        yield* agents.stop("s1")
        expect(poller.calls.at(-1)).toEqual({ op: "stop", agentId: "s1" })
        const won = yield* repo.recordVerdict("s1", { generation: read, ownerEpoch: 0 }, {
          operationalState: OperationalState.GET_QUOTE,
          valid: true,
          receivedAt: 99,
          evaluationState: null,
          nextPollAt: 101
        })
        expect(won).toBe(false)
        expect(yield* agents.show("s1", v26)).toMatchObject({ operational_state: 10, attestation_status: "FAIL", attestation_count: 0 })

        yield* agents.reactivate("s1")
        expect(poller.calls.at(-1)).toEqual({ op: "start", agentId: "s1" })
        expect(Option.getOrThrow(yield* repo.find("s1"))).toMatchObject({ operational_state: 1, generation: read + 2, v_delivered: false })
      }), poller)
    })
  })
}
