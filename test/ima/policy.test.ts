import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  decodeRuntimePolicy,
  decodeRuntimePolicyJson,
  emptyRuntimePolicy,
  encodeRuntimePolicy,
  parseAllowlistText,
  runtimePolicyFromAllowlistText,
  runtimePolicyFromLegacyJson
} from "../../schemas/RuntimePolicy.js"
import { compileExcludes, compilePolicy } from "../../src/ima/policy.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVectorText } from "../support/vectors.js"
import { compile, types } from "./helpers.js"

const crp = (name: string) => readVectorText("keylime", "test", "data", "create-runtime-policy", name)

describe("runtime policy v1 schema", () => {
  it("decodes every v1 policy in the keylime vectors and encodes them back unchanged", () => {
    for (const f of ["policy-sha1", "policy-sha256", "policy-sha384", "policy-sha512", "policy-sm3_256"]) {
      const p = Either.getOrThrow(decodeRuntimePolicyJson(crp(f)))
      expect(encodeRuntimePolicy(p)).toEqual(JSON.parse(crp(f)))
    }
    for (const f of ["runtime-policy-test.json", "sign-runtime-policy/runtime-policy.json", "sign-runtime-policy/runtime-policy-empty.json"]) {
      expect(Either.isRight(decodeRuntimePolicyJson(readVectorText("keylime", "test", "data", ...f.split("/")))), f).toBe(true)
    }
  })
  it("rejects a policy whose digest is not hex, a bogus file, and a missing field", () => {
    // policy-unknown's 62-hex digest fits Keylime's ^[0-9a-f]{40,128}$ too; a non-hex one does not
    expect(Either.isRight(decodeRuntimePolicyJson(crp("policy-unknown")))).toBe(true)
    expect(Either.isLeft(decodeRuntimePolicyJson(crp("policy-unknown").replace("00112233", "zz112233")))).toBe(true)
    expect(Either.isLeft(decodeRuntimePolicyJson(readVectorText("keylime", "test", "data", "sign-runtime-policy", "runtime-policy-bogus.json")))).toBe(true)
    const { excludes: _, ...noExcludes } = emptyRuntimePolicy()
    expect(Either.isLeft(decodeRuntimePolicy(noExcludes))).toBe(true)
  })
  it("rejects a policy whose exclude is not a regular expression, naming it", () => {
    const p = Either.getOrThrow(decodeRuntimePolicy({ ...emptyRuntimePolicy(), excludes: ["/ok/.*", "/bad/(unclosed"] }))
    const r = compilePolicy(p)
    expect(Either.isLeft(r) && r.left.field === "excludes[1]").toBe(true)
  })
  it("translates Python named groups in excludes", () => {
    const re = Either.getOrThrow(compileExcludes(["/var/(?P<x>log|tmp)/.*"]))!
    expect(re.test("/var/log/a")).toBe(true)
    expect(re.test("/usr/var/log/a")).toBe(false)
  })
})

describe("legacy allowlists", () => {
  it("converts the keylime allowlist text per hash algorithm", () => {
    for (const alg of ["sha1", "sha256", "sha384", "sha512", "sm3_256"]) {
      const p = Either.getOrThrow(runtimePolicyFromAllowlistText(crp(`allowlist-${alg}`)))
      expect(Object.keys(p.digests)).toEqual(["data"])
      expect(Either.isRight(decodeRuntimePolicy(p))).toBe(true)
    }
  })
  it("converts the GPG-signed short allowlist and evaluates with it", () => {
    const text = readVectorText("keylime", "test", "data", "ima-allowlist-short.txt")
    const digests = Either.getOrThrow(parseAllowlistText(text))
    expect(Object.keys(digests).length).toBeGreaterThan(5)
    const policy = compile(Either.getOrThrow(runtimePolicyFromAllowlistText(text)))
    expect(policy.digests.size).toBe(Object.keys(digests).length)
  })
  it("names the first bad line of an allowlist", () => {
    const r = parseAllowlistText("aa".repeat(20) + "  /ok\nnot-hex /bad\n")
    expect(Either.isLeft(r) && r.left.line === 2).toBe(true)
  })
  it("converts the old JSON allowlist (hashes → digests)", () => {
    const p = Either.getOrThrow(runtimePolicyFromLegacyJson(JSON.stringify({ meta: { version: 1 }, release: 0, hashes: { "/usr/bin/x": ["AB".repeat(32)] } })))
    expect(p.digests).toEqual({ "/usr/bin/x": ["ab".repeat(32)] })
    const line = "10 " + "00".repeat(20) + " ima-ng sha256:" + "ab".repeat(32) + " /usr/bin/y"
    expect(types(verifyIma({ list: line, startEntry: 0, policy: compile(p) }))).toEqual([])
    expect(Either.isLeft(runtimePolicyFromLegacyJson(readVectorText("keylime", "test-data", "files", "allowlist.json")))).toBe(true)
  })
})
