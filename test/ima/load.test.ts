import { describe, expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Either } from "effect"
import { decodeRuntimePolicyJson, emptyRuntimePolicy, Generator, makeRuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { compileRuntimePolicyDocument } from "../../src/ima/compileDocument.js"
import { signEnvelope } from "../../src/ima/dsseSign.js"
import { loadRuntimePolicy } from "../../src/ima/load.js"
import { compilePolicy } from "../../src/ima/policy.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { makeLine, types } from "./helpers.js"
import { tableOf } from "./tables.js"

const data = (...p: Array<string>) => readVectorText("keylime", "test", "data", ...p)
const policyText = (over: Record<string, unknown> = {}) => JSON.stringify({ ...emptyRuntimePolicy(), ...over })
const loadError = (text: string | Uint8Array, options = {}) => {
  const r = loadRuntimePolicy(text, options)
  if (Either.isRight(r)) throw new Error("expected the policy to be refused")
  return { kind: r.left.kind, path: r.left.path, reason: r.left.reason, message: r.left.message }
}

describe("loadRuntimePolicy: Keylime's policies", () => {
  it("loads every v1 policy of the keylime vectors into the tables the Schema path compiles", () => {
    const files = [
      ["create-runtime-policy", "policy-sha1"],
      ["create-runtime-policy", "policy-sha256"],
      ["create-runtime-policy", "policy-sha512"],
      ["create-runtime-policy", "policy-unknown"],
      ["runtime-policy-test.json"],
      ["sign-runtime-policy", "runtime-policy.json"],
      ["sign-runtime-policy", "runtime-policy-empty.json"]
    ]
    for (const f of files) {
      const text = data(...f)
      const loaded = Either.getOrThrow(loadRuntimePolicy(text))
      const old = Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicyJson(text))))
      expect(tableOf(loaded.policy.digests), f.join("/")).toEqual(tableOf(old.digests))
      expect(loaded.policy.logHashAlg).toBe(old.logHashAlg)
      expect(loaded.policy.exclude?.source).toBe(old.exclude?.source)
      expect(loaded.checksum).toBe(crypto.createHash("sha256").update(readVector("keylime", "test", "data", ...f)).digest("hex"))
    }
  })
  it("evaluates the generated swtpm quote's list with the loaded pass and fail policies as with the Schema path", () => {
    const dir = ["keylime", "generated", "swtpm-quote-1"] as const
    const list = readVectorText(...dir, "ima-log.txt")
    const pcr = { sha256: new Uint8Array(Buffer.from("7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80", "hex")) }
    const pass = Either.getOrThrow(loadRuntimePolicy(readVectorText(...dir, "runtime-policy-pass.json")))
    const fail = Either.getOrThrow(loadRuntimePolicy(readVectorText(...dir, "runtime-policy-fail.json")))
    expect(verifyIma({ list, startEntry: 0, policy: pass.policy, quotedPcr10: pcr }).failures).toEqual([])
    expect(types(verifyIma({ list, startEntry: 0, policy: fail.policy, quotedPcr10: pcr }))).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
  })
  it("reports the checksum of the uploaded bytes and Keylime's has_runtime_policy rule (generator > EmptyAllowList)", () => {
    const text = data("sign-runtime-policy", "runtime-policy-empty.json")
    const fromText = Either.getOrThrow(loadRuntimePolicy(text))
    const fromBytes = Either.getOrThrow(loadRuntimePolicy(new Uint8Array(Buffer.from(text))))
    expect(fromBytes.checksum).toBe(fromText.checksum)
    expect(fromText.checksum).toBe(crypto.createHash("sha256").update(text).digest("hex"))
    expect(fromText.generator).toBe(Generator.LegacyAllowList)
    expect(fromText.hasRuntimePolicy).toBe(true)
    const empty = Either.getOrThrow(loadRuntimePolicy(policyText()))
    expect([empty.generator, empty.hasRuntimePolicy]).toEqual([Generator.EmptyAllowList, false])
    const noGenerator = Either.getOrThrow(loadRuntimePolicy(policyText({ meta: { version: 1 } })))
    expect([noGenerator.generator, noGenerator.hasRuntimePolicy]).toEqual([Generator.Unknown, false])
    expect(empty.signedBy).toBeUndefined()
  })
})

describe("loadRuntimePolicy: refusals name the path and the reason", () => {
  it("answers Keylime's text for the wire vector's schema failure ({\"digests\": \"nope\"})", () => {
    expect(loadError('{"digests": "nope"}')).toEqual({
      kind: "Malformatted",
      path: "",
      reason: "'meta' is a required property",
      message: "Runtime policy is malformatted: 'meta' is a required property"
    })
  })
  it("refuses text that is not JSON, or bytes that are not UTF-8, with Keylime's text", () => {
    expect(loadError("{ not json").message).toBe("Runtime policy is not valid JSON!")
    expect(loadError(new Uint8Array([0x7b, 0xff, 0x7d])).kind).toBe("NotJson")
    expect(loadError("[1, 2]")).toMatchObject({ kind: "Malformatted", path: "", reason: "expected a JSON object, got [1,2]" })
  })
  it("names a bad digest deep inside a large policy by its path and value", () => {
    const policy = makeRuntimePolicy({ digests: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`/usr/lib/f${i}.so`, ["ab".repeat(32)]])) })
    const bad = "ab".repeat(31) + "zz"
    ;(policy.digests as Record<string, Array<string>>)["/usr/lib/f4321.so"] = ["cd".repeat(32), bad]
    expect(loadError(JSON.stringify(policy))).toEqual({
      kind: "Malformatted",
      path: 'digests["/usr/lib/f4321.so"][1]',
      reason: `digest "${bad}" is not lower-case hex of 16 to 64 bytes`,
      message: `Runtime policy is malformatted: digests["/usr/lib/f4321.so"][1]: digest "${bad}" is not lower-case hex of 16 to 64 bytes`
    })
  })
  it("names an empty digest list, a non-list, a non-string digest and an upper-case one", () => {
    expect(loadError(policyText({ keyrings: { ".ima": [] } }))).toMatchObject({ path: 'keyrings[".ima"]', reason: "expected at least one digest" })
    expect(loadError(policyText({ "ima-buf": { x: "ab" } }))).toMatchObject({ path: 'ima-buf["x"]', reason: 'expected a list of digests, got "ab"' })
    expect(loadError(policyText({ digests: { "/a": ["ab".repeat(20), 7] } }))).toMatchObject({ path: 'digests["/a"][1]', reason: "expected a digest string, got 7" })
    expect(loadError(policyText({ digests: { "/a": ["AB".repeat(20)] } }))).toMatchObject({ path: 'digests["/a"][0]' })
  })
  it("names structural problems: a missing nested field, a wrong type, an unknown hash algorithm, a non-object map", () => {
    expect(loadError(policyText({ meta: { generator: 1 } }))).toMatchObject({ path: "meta", reason: "'version' is a required property" })
    expect(loadError(policyText({ release: "0" }))).toMatchObject({ path: "release" })
    expect(loadError(policyText({ ima: { ignored_keyrings: [], log_hash_alg: "md5", dm_policy: null } }))).toMatchObject({ path: "ima.log_hash_alg" })
    expect(loadError(policyText({ digests: [] }))).toMatchObject({ path: "digests", reason: "expected an object of name → [digest, …]" })
    expect(loadError(policyText({ "ima-buf": [] }))).toMatchObject({ path: "ima-buf" })
    expect(loadError(policyText({ excludes: ["/ok/.*", 3] }))).toMatchObject({ path: "excludes[1]" })
  })
  it("names an exclude that is not a regular expression and verification keys that are not a keyring", () => {
    expect(loadError(policyText({ excludes: ["/ok/.*", "/bad/(unclosed"] }))).toMatchObject({ kind: "Malformatted", path: "excludes[1]" })
    expect(loadError(policyText({ "verification-keys": "{}" }))).toMatchObject({ path: "verification-keys" })
  })
  it("cuts a huge bad value short in the message", () => {
    const e = loadError(policyText({ digests: { "/a": ["x".repeat(1_000_000)] } }))
    expect(e.reason.length).toBeLessThan(200)
  })
})

describe("loadRuntimePolicy: DSSE-signed policies", () => {
  const signed = data("runtime-policy-test-signed.json")
  const key = data("runtime-policy-pubkey.pub")
  it("verifies Keylime's signed policy with its key, compiles the payload and keeps the envelope's checksum", () => {
    const r = Either.getOrThrow(loadRuntimePolicy(signed, { key, requireSignature: true }))
    const plain = Either.getOrThrow(loadRuntimePolicy(data("runtime-policy-test.json")))
    expect(tableOf(r.policy.digests)).toEqual(tableOf(plain.policy.digests))
    expect(r.checksum).toBe(crypto.createHash("sha256").update(signed).digest("hex"))
    expect(r.signedBy).toMatch(/^[0-9a-f]{64}$/)
  })
  it("refuses the -bad envelope, another key and a key that is no key with Keylime's 401 text", () => {
    const other = data("sign-runtime-policy", "ec-p521-public.pem")
    for (const [text, k] of [[data("runtime-policy-test-signed-bad.json"), key], [signed, other], [signed, "not a key"]] as const) {
      expect(loadError(text, { key: k })).toMatchObject({ kind: "SignatureInvalid", message: "Runtime policy failed DSSE signature verification!" })
    }
  })
  it("requires a key when signatures are required, and a signed policy when required or keyed", () => {
    expect(loadError(signed, { requireSignature: true })).toMatchObject({
      kind: "KeyMissing",
      message: "Runtime policy signature verification required but no key was given!"
    })
    const plain = data("runtime-policy-test.json")
    expect(loadError(plain, { requireSignature: true, key })).toMatchObject({ kind: "NotSigned", message: "Runtime policy is not signed!" })
    expect(loadError(plain, { key })).toMatchObject({ kind: "NotSigned" })
  })
  it("takes an envelope's payload unverified when no key is given and none is required, as Keylime does", () => {
    const r = Either.getOrThrow(loadRuntimePolicy(signed))
    expect(r.signedBy).toBeUndefined()
    expect(r.policy.digests.size).toBeGreaterThan(10)
  })
  it("names a bad payload inside a verified envelope by its path", () => {
    const priv = crypto.createPrivateKey(data("sign-runtime-policy", "ec-p521-private.pem"))
    const pub = data("sign-runtime-policy", "ec-p521-public.pem")
    const env = Either.getOrThrow(signEnvelope(Buffer.from(policyText({ digests: { "/a": ["nothex"] } })), priv))
    expect(loadError(JSON.stringify(env), { key: pub })).toMatchObject({ kind: "Malformatted", path: 'digests["/a"][0]' })
    const notJson = Either.getOrThrow(signEnvelope(Buffer.from("{nope"), priv))
    expect(loadError(JSON.stringify(notJson), { key: pub })).toMatchObject({ kind: "NotJson", path: "payload" })
    expect(loadError(JSON.stringify({ payload: "eyJ9", payloadType: "x" }), { key: pub })).toMatchObject({
      kind: "Malformatted",
      reason: "'signatures' is a required property"
    })
  })
})

describe("loaded policies evaluate like the Schema path's", () => {
  it("passes the listed entries and fails the others by entry in a 20,000-name policy", () => {
    const names = Array.from({ length: 20_000 }, (_, i) => `/opt/app/lib/m${i}.so`)
    const digest = (i: number) => crypto.createHash("sha256").update(String(i)).digest("hex")
    const policy = makeRuntimePolicy({ digests: Object.fromEntries(names.map((n, i) => [n, [digest(i)]])), generator: Generator.LegacyAllowList })
    const loaded = Either.getOrThrow(loadRuntimePolicy(JSON.stringify(policy)))
    const lines = [17, 4095, 4096, 19_999].map((i) => makeLine("ima-ng", `sha256:${digest(i)}`, names[i]!))
    lines.push(makeLine("ima-ng", `sha256:${digest(1)}`, names[2]!), makeLine("ima-ng", `sha256:${digest(1)}`, "/opt/app/lib/m20000.so"))
    const r = verifyIma({ list: lines.join("\n"), startEntry: 0, policy: loaded.policy })
    expect(r.failures.map((f) => [f.type, f.context.line])).toEqual([
      ["ima.validation.ima-ng.runtime_policy_hash", 5],
      ["ima.validation.ima-ng.not_in_allowlist", 6]
    ])
    const viaSchema = Either.getOrThrow(compileRuntimePolicyDocument(JSON.parse(JSON.stringify(policy))))
    expect(verifyIma({ list: lines.join("\n"), startEntry: 0, policy: viaSchema.policy }).failures).toEqual(r.failures)
  })
})
