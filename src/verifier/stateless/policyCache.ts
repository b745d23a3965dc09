/**
 * verify/evidence's compiled runtime policies by content hash: a client that sends the same policy
 * with every request (a 100,000-digest policy costs far more to decode and compile than its quote to
 * check) has it compiled once. Bounded twice, in entries and in the bytes of policy text they came
 * from (a compiled policy holds a multiple of its text), least recently used dropped first. A policy
 * that does not compile is remembered too: its error is the answer again. One cache per worker.
 */
import { createHash } from "node:crypto"
import type { Either } from "effect"
import type { CompiledPolicy } from "../../ima/policy.js"
import type { EvidenceInputInvalid } from "./evidenceRequest.js"

type Compiled = Either.Either<CompiledPolicy, EvidenceInputInvalid>

export interface PolicyCacheCounters {
  readonly entries: number
  readonly textBytes: number
  readonly hits: number
  readonly compiles: number
}

export interface StatelessPolicyCache {
  /** The compiled policy of `text`, compiled by `compile` on a miss. */
  readonly compile: (text: string, compile: (text: string) => Compiled) => Compiled
  readonly counters: () => PolicyCacheCounters
}

/** 256 MiB of policy text per cache (tens of 100,000-digest policies). */
export const POLICY_CACHE_TEXT_BYTES = 256 * 1024 * 1024

export const makeStatelessPolicyCache = (maxEntries: number, maxTextBytes = POLICY_CACHE_TEXT_BYTES): StatelessPolicyCache => {
  // Map keeps insertion order: the first key is the least recently used
  const entries = new Map<string, { readonly compiled: Compiled; readonly bytes: number }>()
  let textBytes = 0
  let hits = 0
  let compiles = 0
  const evict = () => {
    while (entries.size > maxEntries || (textBytes > maxTextBytes && entries.size > 0)) {
      const [key, oldest] = entries.entries().next().value!
      entries.delete(key)
      textBytes -= oldest.bytes
    }
  }
  return {
    compile: (text, compile) => {
      const key = createHash("sha256").update(text).digest("hex")
      const hit = entries.get(key)
      if (hit !== undefined) {
        hits++
        entries.delete(key)
        entries.set(key, hit)
        return hit.compiled
      }
      compiles++
      const compiled = compile(text)
      // UTF-16 length: what the text held, near enough for a bound
      const bytes = text.length
      if (bytes <= maxTextBytes) {
        entries.set(key, { compiled, bytes })
        textBytes += bytes
        evict()
      }
      return compiled
    },
    counters: () => ({ entries: entries.size, textBytes, hits, compiles })
  }
}
