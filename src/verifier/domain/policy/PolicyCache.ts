/**
 * Compiled runtime policies and parsed measured-boot reference states, keyed by the checksum stored
 * with each policy: a policy is compiled once (by the first cycle that needs it), never per
 * attestation, and agents sharing a policy share one compiled copy. Bounded: the least recently
 * used entries are dropped past `policy_cache_size` (a 100,000-digest policy holds tens of MB).
 * The text is fetched only on a miss; the compile itself runs without yielding, so two cycles
 * missing at once compile it once.
 */
import { Data, Effect, Either, Layer, Schema } from "effect"
import { VerifierConfig } from "../../../config/services.js"
import { type LoadedRuntimePolicy, loadRuntime } from "./loadRuntime.js"
import { Lru } from "./lru.js"
import { isEmptyMbPolicyText } from "./mbUpload.js"

/** A stored policy that does not load (stored by an older, laxer version): the loop reports it. */
export class StoredPolicyUnloadable extends Data.TaggedError("StoredPolicyUnloadable")<{
  readonly kind: "runtime" | "mb"
  readonly checksum: string
  readonly reason: string
}> {
  override get message(): string {
    return `stored ${this.kind} policy ${this.checksum.slice(0, 12)}… does not load: ${this.reason}`
  }
}

export interface PolicyCacheStats {
  readonly runtimeEntries: number
  readonly mbEntries: number
  readonly hits: number
  readonly misses: number
  readonly compiles: number
  readonly evictions: number
}

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

export const makePolicyCache = (capacity: number) => {
  const runtime = new Lru<string, LoadedRuntimePolicy>(capacity)
  const mb = new Lru<string, unknown>(capacity)
  const counters = { hits: 0, misses: 0, compiles: 0 }

  /** The compiled policy of `checksum`; `loadText` reads the stored text on a miss. */
  const runtimePolicy = <E, R>(checksum: string, loadText: Effect.Effect<string, E, R>) =>
    Effect.suspend(() => {
      const hit = runtime.get(checksum)
      if (hit !== undefined) {
        counters.hits++
        return Effect.succeed(hit)
      }
      counters.misses++
      return Effect.flatMap(loadText, (text) =>
        Effect.suspend((): Effect.Effect<LoadedRuntimePolicy, StoredPolicyUnloadable> => {
          const again = runtime.get(checksum)
          if (again !== undefined) return Effect.succeed(again)
          const loaded = loadRuntime(text)
          if (Either.isLeft(loaded)) {
            return Effect.fail(new StoredPolicyUnloadable({ kind: "runtime", checksum, reason: `${loaded.left.field} ${loaded.left.reason}` }))
          }
          counters.compiles++
          // the policy may have been replaced since the checksum was read: file it under its own
          runtime.set(loaded.right.checksum, loaded.right)
          return Effect.succeed(loaded.right)
        }))
    }).pipe(Effect.withSpan("PolicyCache.runtime"))

  /** The parsed reference state of `checksum` (null for an empty policy). */
  const mbPolicy = <E, R>(checksum: string, loadText: Effect.Effect<string | null, E, R>) =>
    Effect.suspend((): Effect.Effect<unknown, E | StoredPolicyUnloadable, R> => {
      if (checksum === "") return Effect.succeed(null)
      if (mb.has(checksum)) {
        counters.hits++
        return Effect.succeed(mb.get(checksum))
      }
      counters.misses++
      return Effect.flatMap(loadText, (text) => {
        if (isEmptyMbPolicyText(text)) return Effect.succeed(null)
        const parsed = decodeJson(text)
        if (Either.isLeft(parsed)) return Effect.fail(new StoredPolicyUnloadable({ kind: "mb", checksum, reason: "is not JSON" }))
        counters.compiles++
        mb.set(checksum, parsed.right)
        return Effect.succeed(parsed.right)
      })
    }).pipe(Effect.withSpan("PolicyCache.mb"))

  const stats: Effect.Effect<PolicyCacheStats> = Effect.sync(() => ({
    runtimeEntries: runtime.size,
    mbEntries: mb.size,
    ...counters,
    evictions: runtime.evictions + mb.evictions
  }))

  return { runtime: runtimePolicy, mb: mbPolicy, stats } as const
}

export class PolicyCache extends Effect.Service<PolicyCache>()("attest/verifier/PolicyCache", {
  effect: Effect.map(VerifierConfig, (config) => makePolicyCache(config.policy_cache_size))
}) {
  /** A cache of the given capacity, without the verifier config (tests, benchmarks, embedding). */
  static readonly withCapacity = (capacity: number) => Layer.sync(PolicyCache, () => PolicyCache.make(makePolicyCache(capacity)))
}
