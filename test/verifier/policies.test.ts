/**
 * Runtime and measured-boot policies on SQLite and PostgreSQL with Keylime's semantics: create,
 * replace, read (`tmp_policy`), list in creation order, delete (in use → the agent named). Uploads
 * are checked before anything is stored: DSSE envelopes and detached signatures with their key,
 * `require_allow_list_signatures`, the schema; an mb policy must be JSON (a deliberate difference).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { Policies } from "../../src/verifier/domain/policy/Policies.js"
import { invalidRuntimePolicyStatus, invalidRuntimePolicyText, VerifierText } from "../../src/verifier/domain/texts.js"
import { testDatabase } from "../support/db.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { backends, record, recordedPolicyBase64, snapshotTables, validBody, verifierLayer } from "./support.js"

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64")
const data = (name: string) => readVectorText("keylime", "test", "data", name)
const signedPolicy = () => data("runtime-policy-test-signed.json")
const policyKey = () => b64(data("runtime-policy-pubkey.pub"))
const status = (id: string) => (record(id).response.body as { status: string }).status

for (const [backend, available] of backends) {
  describe.skipIf(!available)(`verifier Policies on ${backend}`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, any>, config = {}) =>
      Effect.gen(function*() {
        const db = yield* testDatabase(backend)
        return yield* effect.pipe(Effect.provide(verifierLayer(db, config)))
      })

    it.scoped("runtime policies: create, duplicate, read with tmp_policy, list in creation order, replace, unknown names", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        yield* p.addRuntime("rt1", record("ver-allowlist-add-ok").request.body)
        const dup = yield* Effect.flip(p.addRuntime("rt1", record("ver-allowlist-add-duplicate").request.body))
        expect(dup).toMatchObject({ _tag: "RuntimePolicyExists", name: "rt1" })
        expect(VerifierText.runtimePolicyExists("rt1")).toBe(status("ver-allowlist-add-duplicate"))
        yield* p.addRuntime("rt25", { runtime_policy: recordedPolicyBase64(), tpm_policy: "{\"mask\": \"0x400\"}" })
        expect(yield* p.getRuntime("rt1")).toEqual((record("ver-allowlist-get-ok").response.body as { results: unknown }).results)
        expect((yield* p.getRuntime("rt25")).tmp_policy).toBe("{\"mask\": \"0x400\"}")
        expect(yield* p.listRuntime()).toEqual({ "runtimepolicy names": ["rt1", "rt25"] })
        yield* p.updateRuntime("rt25", { runtime_policy: b64("{\"meta\": {\"version\": 1}, \"release\": 1, \"digests\": {}, \"excludes\": [], \"keyrings\": {}, \"ima\": {\"ignored_keyrings\": [], \"log_hash_alg\": \"sha1\", \"dm_policy\": null}, \"ima-buf\": {}, \"verification-keys\": \"\"}") })
        expect(JSON.parse((yield* p.getRuntime("rt25")).runtime_policy).release).toBe(1)
        expect(yield* Effect.flip(p.updateRuntime("nope", { runtime_policy: recordedPolicyBase64() }))).toMatchObject({ _tag: "RuntimePolicyNotFound" })
        expect(VerifierText.runtimePolicyUpdateUnknown("nope")).toBe(status("ver-allowlist-update-unknown"))
        expect(yield* Effect.flip(p.getRuntime("nope"))).toMatchObject({ _tag: "RuntimePolicyNotFound", name: "nope" })
        expect(VerifierText.runtimePolicyNotFound("nope")).toBe(status("ver-allowlist-get-unknown"))
        expect(yield* Effect.flip(p.deleteRuntime("nope"))).toMatchObject({ _tag: "RuntimePolicyNotFound" })
        yield* p.deleteRuntime("rt25")
        expect(yield* p.listRuntime()).toEqual({ "runtimepolicy names": ["rt1"] })
      })))

    it.scoped("a policy in use is not deleted (the agent is named) until its agent is gone", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        const agents = yield* Agents
        yield* p.addRuntime("rt1", { runtime_policy: recordedPolicyBase64() })
        yield* p.addMb("mb1", { mb_policy: "{\"has_secureboot\": false}" })
        yield* agents.add("user", { ...validBody(), runtime_policy_name: "rt1", mb_policy_name: "mb1" })
        expect(yield* Effect.flip(p.deleteRuntime("rt1"))).toMatchObject({ _tag: "RuntimePolicyInUse", name: "rt1", agentId: "user" })
        expect(yield* Effect.flip(p.deleteMb("mb1"))).toMatchObject({ _tag: "MbPolicyInUse", name: "mb1", agentId: "user" })
        yield* agents.stop("user")
        yield* agents.remove("user")
        yield* p.deleteRuntime("rt1")
        yield* p.deleteMb("mb1")
        expect(yield* p.listRuntime()).toEqual({ "runtimepolicy names": [] })
      })))

    it.scoped("refuses bad uploads naming the field, with Keylime's texts, and stores nothing", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        const before = yield* snapshotTables
        const cases: ReadonlyArray<readonly [string, unknown, string, string]> = [
          // Keylime answers 500 (empty) for the first two; attest says what is wrong
          ["not JSON", record("ver-allowlist-add-invalid-json").request.body, "runtime_policy", VerifierText.runtimePolicyNotJson],
          ["no runtime_policy", {}, "runtime_policy", "runtime_policy is required (base64 of the policy JSON)"],
          ["schema", record("ver-allowlist-add-invalid-schema").request.body, "runtime_policy.meta", status("ver-allowlist-add-invalid-schema")],
          ["not base64", { runtime_policy: "%%%" }, "runtime_policy", "runtime_policy is not valid base64"],
          ["bad log_hash_alg", { runtime_policy: b64(JSON.stringify({ ...JSON.parse(Buffer.from(recordedPolicyBase64(), "base64").toString()), ima: { ignored_keyrings: [], log_hash_alg: "md5", dm_policy: null } })) }, "runtime_policy.ima.log_hash_alg", "Runtime policy is malformatted: runtime_policy.ima.log_hash_alg"],
          ["bad exclude regex", { runtime_policy: b64(JSON.stringify({ ...JSON.parse(Buffer.from(recordedPolicyBase64(), "base64").toString()), excludes: ["(unclosed"] })) }, "runtime_policy.excludes[0]", "Runtime policy is malformatted: runtime_policy.excludes[0]"],
          ["bad tpm_policy", { runtime_policy: recordedPolicyBase64(), tpm_policy: "{}" }, "tpm_policy", "tpm_policy has no \"mask\""],
          ["key not a key", { runtime_policy: recordedPolicyBase64(), runtime_policy_key: b64("nope") }, "runtime_policy_key", "runtime_policy_key is not a public key"],
          ["key without a signature", { runtime_policy: recordedPolicyBase64(), runtime_policy_key: policyKey() }, "runtime_policy_key", "runtime_policy_key is given but there is no signature to check"],
          ["list body", [1], "body", "body must be a JSON object"]
        ]
        for (const [name, body, field, text] of cases) {
          const e = yield* Effect.flip(p.addRuntime("rt-bad", body))
          expect(e._tag, name).toBe("InvalidRuntimePolicy")
          if (e._tag !== "InvalidRuntimePolicy") continue
          expect(e.field, name).toBe(field)
          expect(invalidRuntimePolicyText(e).startsWith(text), `${name}: ${invalidRuntimePolicyText(e)}`).toBe(true)
        }
        expect(yield* Effect.flip(p.addRuntime("bad name", { runtime_policy: recordedPolicyBase64() }))).toMatchObject({ _tag: "InvalidPolicyName" })
        expect(yield* snapshotTables).toEqual(before)
      })))

    it.scoped("DSSE: a signed policy with its key is stored as its verified payload; a bad signature or a missing key is refused (401)", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        yield* p.addRuntime("signed", { runtime_policy: b64(signedPolicy()), runtime_policy_key: policyKey() })
        expect((yield* p.getRuntime("signed")).runtime_policy.trim()).toBe(data("runtime-policy-test.json").trim())
        const before = yield* snapshotTables
        const bad = yield* Effect.flip(p.addRuntime("bad", { runtime_policy: b64(data("runtime-policy-test-signed-bad.json")), runtime_policy_key: policyKey() }))
        expect(bad).toMatchObject({ _tag: "InvalidRuntimePolicy", problem: "bad_signature" })
        if (bad._tag === "InvalidRuntimePolicy") {
          expect([invalidRuntimePolicyStatus(bad), invalidRuntimePolicyText(bad)]).toEqual([401, "Runtime policy failed DSSE signature verification!"])
        }
        const otherKey = b64(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-public.pem"))
        expect(yield* Effect.flip(p.addRuntime("other", { runtime_policy: b64(signedPolicy()), runtime_policy_key: otherKey })))
          .toMatchObject({ problem: "bad_signature" })
        const noKey = yield* Effect.flip(p.addRuntime("nokey", { runtime_policy: b64(signedPolicy()) }))
        expect(noKey).toMatchObject({ problem: "key_required" })
        if (noKey._tag === "InvalidRuntimePolicy") expect(invalidRuntimePolicyStatus(noKey)).toBe(401)
        expect(yield* snapshotTables).toEqual(before)
      })))

    it.scoped("detached runtime_policy_sig is checked with runtime_policy_key", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        const priv = crypto.createPrivateKey(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-private.pem"))
        const policy = readVector("keylime", "test", "data", "sign-runtime-policy", "runtime-policy.json")
        const key = b64(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-public.pem"))
        const sig = b64(crypto.sign("sha256", policy, priv))
        yield* p.addRuntime("detached", { runtime_policy: b64(policy), runtime_policy_sig: sig, runtime_policy_key: key })
        const tampered = Buffer.from(Buffer.from(policy).toString().replace("}", " }"))
        expect(yield* Effect.flip(p.addRuntime("tampered", { runtime_policy: b64(tampered), runtime_policy_sig: sig, runtime_policy_key: key })))
          .toMatchObject({ _tag: "InvalidRuntimePolicy", field: "runtime_policy_sig", problem: "bad_signature" })
        expect(yield* Effect.flip(p.addRuntime("nokey", { runtime_policy: b64(policy), runtime_policy_sig: sig })))
          .toMatchObject({ field: "runtime_policy_sig", problem: "invalid" })
      })))

    it.scoped("require_allow_list_signatures: unsigned refused (no key: 401, key without signature: not signed), signed accepted", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        const noKey = yield* Effect.flip(p.addRuntime("u1", { runtime_policy: recordedPolicyBase64() }))
        expect(noKey).toMatchObject({ problem: "key_required" })
        if (noKey._tag === "InvalidRuntimePolicy") expect(invalidRuntimePolicyText(noKey)).toBe(VerifierText.runtimePolicyKeyRequired)
        const unsigned = yield* Effect.flip(p.addRuntime("u2", { runtime_policy: recordedPolicyBase64(), runtime_policy_key: policyKey() }))
        expect(unsigned).toMatchObject({ problem: "not_signed" })
        if (unsigned._tag === "InvalidRuntimePolicy") {
          expect([invalidRuntimePolicyStatus(unsigned), invalidRuntimePolicyText(unsigned)]).toEqual([400, "Runtime policy is not signed!"])
        }
        yield* p.addRuntime("s1", { runtime_policy: b64(signedPolicy()), runtime_policy_key: policyKey() })
        expect(yield* p.listRuntime()).toEqual({ "runtimepolicy names": ["s1"] })
      }), { require_allow_list_signatures: true }))

    it.scoped("mb policies: create, duplicate, empty, read, list, replace, unknown (PUT → not found), delete; non-JSON refused, nothing stored", () =>
      run(Effect.gen(function*() {
        const p = yield* Policies
        yield* p.addMb("mb1", record("ver-mbpolicy-add-ok").request.body)
        expect(yield* Effect.flip(p.addMb("mb1", record("ver-mbpolicy-add-duplicate").request.body))).toMatchObject({ _tag: "MbPolicyExists" })
        expect(VerifierText.mbPolicyExists("mb1")).toBe(status("ver-mbpolicy-add-duplicate"))
        yield* p.addMb("mb-null", {})
        expect(yield* p.getMb("mb1")).toEqual((record("ver-mbpolicy-get-ok").response.body as { results: unknown }).results)
        expect(yield* p.getMb("mb-null")).toEqual({ name: "mb-null", mb_policy: null })
        expect(yield* Effect.flip(p.getMb("nope"))).toMatchObject({ _tag: "MbPolicyNotFound" })
        expect(VerifierText.mbPolicyNotFound("nope")).toBe(status("ver-mbpolicy-get-unknown"))
        const before = yield* snapshotTables
        const notJson = yield* Effect.flip(p.addMb("mb-bad", record("ver-mbpolicy-add-invalid-json").request.body))
        expect(notJson).toMatchObject({ _tag: "InvalidMbPolicy", field: "mb_policy", reason: "is not JSON" })
        expect(yield* Effect.flip(p.addMb("mb-bad", { mb_policy: 7 }))).toMatchObject({ _tag: "InvalidMbPolicy", field: "mb_policy" })
        expect(yield* snapshotTables).toEqual(before)
        yield* p.updateMb("mb1", { mb_policy: "{\"has_secureboot\": true}" })
        expect((yield* p.getMb("mb1")).mb_policy).toBe("{\"has_secureboot\": true}")
        expect(yield* Effect.flip(p.updateMb("nope", { mb_policy: "{}" }))).toMatchObject({ _tag: "MbPolicyNotFound" })
        expect(VerifierText.mbPolicyUpdateUnknown("nope")).toBe(status("ver-mbpolicy-update-unknown"))
        expect(yield* p.listMb()).toEqual({ "mbpolicy names": ["mb1", "mb-null"] })
        yield* p.deleteMb("mb1")
        expect(yield* Effect.flip(p.deleteMb("mb1"))).toMatchObject({ _tag: "MbPolicyNotFound" })
        expect(yield* p.listMb()).toEqual({ "mbpolicy names": ["mb-null"] })
      })))
  })
}
