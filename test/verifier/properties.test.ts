/**
 * Property tests of the verifier's request readers: random mutations of a valid creation body,
 * of policy uploads and of policy texts end in a typed error that names a field (or are accepted),
 * never in an exception.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { decodeAgentCreation, REQUIRED_KEYS } from "../../src/verifier/domain/agentBody.js"
import { InvalidAgentBody, InvalidRuntimePolicy } from "../../src/verifier/domain/errors.js"
import { loadRuntime } from "../../src/verifier/domain/policy/loadRuntime.js"
import { prepareMbPolicy } from "../../src/verifier/domain/policy/mbUpload.js"
import { base64Buffer, decodeMbPolicyRequest, decodeRuntimePolicyRequest } from "../../src/verifier/domain/policy/Policies.js"
import { prepareRuntimePolicy } from "../../src/verifier/domain/policy/runtimeUpload.js"
import { invalidAgentBodyText, invalidRuntimePolicyText } from "../../src/verifier/domain/texts.js"
import { recordedPolicyBase64, validBody } from "./support.js"

const KNOWN_FIELDS = [
  ...REQUIRED_KEYS,
  "v",
  "cloudagent_ip",
  "cloudagent_port",
  "verifier_ip",
  "verifier_port",
  "runtime_policy",
  "runtime_policy_name",
  "runtime_policy_key",
  "runtime_policy_sig",
  "mb_policy",
  "mb_policy_name",
  "mb_refstate",
  "mtls_cert",
  "supported_version",
  "vtpm_policy",
  "allowlist"
]
const FIELD_NAMES = new Set<string>([...KNOWN_FIELDS, "body", "agent_id"])

type Mutation = { readonly key: string; readonly op: "delete" | "set"; readonly value: unknown }

const mutation: fc.Arbitrary<Mutation> = fc.record({
  key: fc.oneof(fc.constantFrom(...KNOWN_FIELDS), fc.string({ maxLength: 12 })),
  op: fc.constantFrom("delete" as const, "set" as const),
  value: fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.base64String({ maxLength: 64 }),
    fc.constantFrom("", "null", "disabled", "{}", "{\"mask\": \"0x400\"}", "%%%", "bm90IGpzb24=")
  )
})

const apply = (body: Record<string, unknown>, ms: ReadonlyArray<Mutation>) => {
  for (const m of ms) {
    if (m.op === "delete") delete body[m.key]
    else body[m.key] = m.value
  }
  return body
}

describe("creation-body reader", () => {
  it("reads random mutations of a valid body into a checked creation or an error naming a known field, never an exception", () => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.boolean(), (ms, requireMtlsCert) => {
        const result = decodeAgentCreation("prop-agent", apply(validBody(), ms), { requireMtlsCert, defaultModel: "pull" })
        if (Either.isLeft(result)) {
          expect(result.left).toBeInstanceOf(InvalidAgentBody)
          expect(FIELD_NAMES.has(result.left.field), result.left.field).toBe(true)
          expect(invalidAgentBodyText(result.left).length).toBeGreaterThan(0)
        } else {
          expect(result.right.ip.length).toBeGreaterThan(0)
        }
      }),
      { numRuns: 400 }
    )
  })

  it("refuses any JSON value that is not an object, naming the body", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue().filter((v) => typeof v !== "object" || v === null || Array.isArray(v))), (value) => {
        const result = decodeAgentCreation("prop-agent", value, { requireMtlsCert: true, defaultModel: "pull" })
        expect(Either.isLeft(result) && result.left.field).toBe("body")
      })
    )
  })

  it("never throws on random bytes in base64 fields (ak_tpm, v, runtime_policy, keys)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("ak_tpm", "v", "runtime_policy", "runtime_policy_key", "runtime_policy_sig"),
        fc.uint8Array({ maxLength: 400 }),
        (field, bytes) => {
          const body = { ...validBody(), [field]: Buffer.from(bytes).toString("base64") }
          if (field === "runtime_policy_sig") body["runtime_policy_key"] = Buffer.from("k").toString("base64")
          const result = decodeAgentCreation("prop-agent", body, { requireMtlsCert: true, defaultModel: "pull" })
          if (Either.isLeft(result)) expect(FIELD_NAMES.has(result.left.field)).toBe(true)
        }
      ),
      { numRuns: 200 }
    )
  })
})

describe("policy upload readers", () => {
  it("strict base64 takes exactly the texts whose bytes encode back to them", () => {
    const alphabet = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n%é"]
    const near = fc.uint8Array({ maxLength: 40 }).chain((bytes) => {
      const good = Buffer.from(bytes).toString("base64")
      return fc.tuple(fc.nat({ max: good.length }), fc.constantFrom(...alphabet), fc.boolean()).map(([at, c, replace]) =>
        good.slice(0, at) + c + good.slice(replace ? at + 1 : at))
    })
    fc.assert(
      fc.property(fc.oneof(near, fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString("base64")), fc.string({ maxLength: 12 })), (s) => {
        const roundTrip = Buffer.from(s, "base64").toString("base64") === s
        expect([s, base64Buffer(s) !== undefined]).toEqual([s, roundTrip])
      }),
      { numRuns: 3000 }
    )
  })

  const policyText = Buffer.from(recordedPolicyBase64(), "base64").toString()

  it("random runtime-policy request bodies are refused with a field, or read", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("runtime_policy", "runtime_policy_key", "runtime_policy_sig", "tpm_policy", "x"), fc.jsonValue({ maxDepth: 1 })), (body) => {
        const result = decodeRuntimePolicyRequest("p", body)
        if (Either.isLeft(result)) {
          expect(result.left).toBeInstanceOf(InvalidRuntimePolicy)
          expect(invalidRuntimePolicyText(result.left).length).toBeGreaterThan(0)
        }
      })
    )
  })

  it("truncated or altered policy texts load or fail with a field and Keylime's text, never throw", () => {
    fc.assert(
      fc.property(fc.nat({ max: policyText.length }), fc.nat({ max: policyText.length }), fc.string({ maxLength: 3 }), (cut, at, insert) => {
        const text = policyText.slice(0, cut) + insert + policyText.slice(cut, at > cut ? at : cut) // keeps or drops a tail
        const loaded = loadRuntime(text)
        if (Either.isLeft(loaded)) {
          expect(loaded.left.field.startsWith("runtime_policy")).toBe(true)
          expect(loaded.left.keylimeText.startsWith("Runtime policy is")).toBe(true)
        }
        const prepared = prepareRuntimePolicy("p", { text, key: null, signature: null }, { requireSignatures: false })
        if (Either.isLeft(prepared)) expect(prepared.left.field.length).toBeGreaterThan(0)
      }),
      { numRuns: 300 }
    )
  })

  it("random JSON documents as runtime policies are refused naming a path under runtime_policy", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (doc) => {
        const loaded = loadRuntime(JSON.stringify(doc))
        expect(Either.isLeft(loaded)).toBe(true)
        if (Either.isLeft(loaded)) expect(loaded.left.field).toMatch(/^runtime_policy/)
      })
    )
  })

  it("random mb-policy bodies and texts are stored as JSON objects or refused naming mb_policy", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ mb_policy: fc.oneof(fc.string(), fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))) })), (body) => {
        const text = decodeMbPolicyRequest("m", body)
        if (Either.isLeft(text)) {
          expect(["body", "mb_policy"]).toContain(text.left.field)
          return
        }
        const data = prepareMbPolicy("m", text.right)
        if (Either.isLeft(data)) expect(data.left.field).toBe("mb_policy")
        else expect(data.right.has_policy).toBe(data.right.key_count > 0)
      })
    )
  })
})
