/**
 * The policy cache compiles a runtime policy once per checksum (shared by every agent and cycle
 * that uses it, also when cycles miss at the same moment), forgets the least recently used policy
 * beyond its bound, and reports a stored policy that no longer loads as a typed error.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Ref } from "effect"
import { checksumOf, loadRuntime } from "../../src/verifier/domain/policy/loadRuntime.js"
import { Lru } from "../../src/verifier/domain/policy/lru.js"
import { makePolicyCache } from "../../src/verifier/domain/policy/PolicyCache.js"
import { EMPTY_RUNTIME_POLICY_TEXT } from "../../src/verifier/domain/policy/runtimeUpload.js"
import { recordedPolicyBase64 } from "./support.js"

const policyWithRelease = (release: number) => {
  const doc = JSON.parse(Buffer.from(recordedPolicyBase64(), "base64").toString()) as Record<string, unknown>
  return JSON.stringify({ ...doc, release })
}

/** A text source that counts how often the store was read. */
const source = (text: string) =>
  Effect.map(Ref.make(0), (reads) => ({ reads, load: Ref.update(reads, (n) => n + 1).pipe(Effect.as(text)) }))

describe("LRU", () => {
  it("evicts the least recently used entry past its capacity", () => {
    const lru = new Lru<string, number>(2)
    lru.set("a", 1)
    lru.set("b", 2)
    expect(lru.get("a")).toBe(1) // a is now the most recent
    lru.set("c", 3)
    expect(lru.keys()).toEqual(["a", "c"])
    expect([lru.get("b"), lru.size, lru.evictions]).toEqual([undefined, 2, 1])
    lru.set("a", 10)
    lru.set("d", 4)
    expect(lru.keys()).toEqual(["a", "d"])
    expect(() => new Lru(0)).toThrow(RangeError)
  })
})

describe("policy cache", () => {
  it.effect("compiles a policy once: later cycles get the same compiled object without reading the store", () =>
    Effect.gen(function*() {
      const cache = makePolicyCache(4)
      const text = policyWithRelease(1)
      const { reads, load } = yield* source(text)
      const first = yield* cache.runtime(checksumOf(text), load)
      const second = yield* cache.runtime(checksumOf(text), load)
      expect(second).toBe(first)
      expect(first.checksum).toBe(checksumOf(text))
      expect(first.hasPolicy).toBe(true)
      expect(yield* Ref.get(reads)).toBe(1)
      expect(yield* cache.stats).toMatchObject({ runtimeEntries: 1, hits: 1, misses: 1, compiles: 1 })
    }))

  it.effect("cycles that miss at the same time compile the policy once", () =>
    Effect.gen(function*() {
      const cache = makePolicyCache(4)
      const text = policyWithRelease(2)
      const { load } = yield* source(text)
      const slowLoad = Effect.zipRight(Effect.yieldNow(), load)
      const results = yield* Effect.all(Array.from({ length: 8 }, () => cache.runtime(checksumOf(text), slowLoad)), { concurrency: "unbounded" })
      expect(new Set(results).size).toBe(1)
      expect((yield* cache.stats).compiles).toBe(1)
    }))

  it.effect("keeps at most its capacity, dropping the least recently used policy (which is compiled again when needed)", () =>
    Effect.gen(function*() {
      const cache = makePolicyCache(2)
      const texts = [policyWithRelease(10), policyWithRelease(11), policyWithRelease(12)]
      const get = (t: string) => cache.runtime(checksumOf(t), Effect.succeed(t))
      yield* get(texts[0]!)
      yield* get(texts[1]!)
      yield* get(texts[0]!) // 0 is the most recent, 1 the least
      yield* get(texts[2]!)
      expect(yield* cache.stats).toMatchObject({ runtimeEntries: 2, compiles: 3, evictions: 1 })
      yield* get(texts[0]!)
      expect((yield* cache.stats).compiles).toBe(3)
      yield* get(texts[1]!)
      expect(yield* cache.stats).toMatchObject({ runtimeEntries: 2, compiles: 4, evictions: 2 })
    }))

  it.effect("is keyed by content: policies under different names with the same text share one entry", () =>
    Effect.gen(function*() {
      const cache = makePolicyCache(4)
      const a = yield* cache.runtime(checksumOf(EMPTY_RUNTIME_POLICY_TEXT), Effect.succeed(EMPTY_RUNTIME_POLICY_TEXT))
      const b = yield* cache.runtime(checksumOf(EMPTY_RUNTIME_POLICY_TEXT), Effect.succeed(EMPTY_RUNTIME_POLICY_TEXT))
      expect(b).toBe(a)
      expect(a.hasPolicy).toBe(false)
      expect(Either.getOrThrow(loadRuntime(EMPTY_RUNTIME_POLICY_TEXT)).checksum).toBe(a.checksum)
    }))

  it.effect("reports a stored policy that does not load, and parses mb reference states once (empty: null, no read)", () =>
    Effect.gen(function*() {
      const cache = makePolicyCache(4)
      const broken = yield* Effect.flip(cache.runtime("abc", Effect.succeed("{\"digests\": 1}")))
      expect(broken).toMatchObject({ _tag: "StoredPolicyUnloadable", kind: "runtime", checksum: "abc" })
      const { reads, load } = yield* source("{\"has_secureboot\": true}")
      expect(yield* cache.mb("m1", load)).toEqual({ has_secureboot: true })
      expect(yield* cache.mb("m1", load)).toEqual({ has_secureboot: true })
      expect(yield* Ref.get(reads)).toBe(1)
      expect(yield* cache.mb("", Effect.die("must not read"))).toBe(null)
    }))
})
