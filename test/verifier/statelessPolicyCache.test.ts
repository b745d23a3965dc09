/**
 * verify/evidence's compiled-policy cache (src/verifier/stateless/policyCache.ts): the same policy
 * text is compiled once, whatever request it comes in; the cache keeps at most its entries and its
 * text bytes, least recently used out first; a policy that does not compile is answered from the
 * cache too. And through the whole request function: the second request with the same policy does
 * not compile it again.
 */
import { describe, expect, it } from "vitest"
import { Either } from "effect"
import { acceptAllPolicy } from "../../src/boot/policy.js"
import { defaultSeverityPolicy, runtimePolicyOf } from "../../src/verifier/index.js"
import { judgeEvidence } from "../../src/verifier/stateless/judgeEvidence.js"
import { makeStatelessPolicyCache } from "../../src/verifier/stateless/policyCache.js"
import { record } from "./support.js"

/** The captured request's runtime policy with one more file. */
const policy = (extra: string) => {
  const p = JSON.parse((record("ver-evidence-ok-runtime-policy").request.body as { data: { runtime_policy: string } }).data.runtime_policy)
  p.digests[`/usr/bin/${extra}`] = ["a".repeat(64)]
  return JSON.stringify(p)
}

describe("verify/evidence compiled-policy cache", () => {
  it("compiles a text once, evicts the least recently used past its entries or bytes, remembers errors", () => {
    const cache = makeStatelessPolicyCache(2, 10_000)
    let compiled = 0
    const compile = (text: string) => (compiled++, runtimePolicyOf(text))
    const [a, b, c] = [policy("a"), policy("b"), policy("c")]
    expect(Either.isRight(cache.compile(a, compile))).toEqual(true)
    cache.compile(a, compile)
    cache.compile(b, compile)
    cache.compile(a, compile) // a is now the most recent
    cache.compile(c, compile) // b goes
    cache.compile(a, compile)
    expect([compiled, cache.counters().entries]).toEqual([3, 2])
    cache.compile(b, compile)
    expect(compiled).toEqual(4)
    // a bad policy is answered from the cache the second time, with the same error
    const bad = cache.compile("{not json", compile)
    expect([Either.isLeft(bad), cache.compile("{not json", compile), compiled]).toEqual([true, bad, 5])
    // bytes: a text larger than the whole budget is compiled but not kept; small ones past it push out the oldest
    const tight = makeStatelessPolicyCache(100, a.length * 2)
    tight.compile(a, compile)
    tight.compile(b, compile)
    tight.compile(c, compile)
    expect(tight.counters()).toEqual({ entries: 2, textBytes: b.length + c.length, hits: 0, compiles: 3 })
  })

  it("a request's runtime policy is compiled once across requests (judgeEvidence with the cache)", () => {
    const cache = makeStatelessPolicyCache(8)
    const body = new TextEncoder().encode(JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body))
    const ctx = {
      severity: defaultSeverityPolicy,
      measuredBootPolicy: acceptAllPolicy,
      reportTomtou: false,
      compileRuntimePolicy: (text: string) => cache.compile(text, runtimePolicyOf)
    }
    const first = judgeEvidence(body, { major: 2, minor: 6 }, false, ctx)
    const second = judgeEvidence(body, { major: 2, minor: 6 }, false, ctx)
    expect([first.status, first.verdict?.valid, second.status, second.verdict?.valid]).toEqual([200, true, 200, true])
    expect(Buffer.from(second.body).toString()).toEqual(Buffer.from(first.body).toString())
    expect(cache.counters()).toMatchObject({ entries: 1, hits: 1, compiles: 1 })
  })
})
