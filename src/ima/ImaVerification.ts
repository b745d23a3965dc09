/**
 * The entry point the verifier and `verify/evidence` call. The engine is pure and synchronous; this
 * service gives it spans and typed errors, and caches compiled policies by checksum so a policy is
 * compiled once, not once per attestation.
 */
import { Effect, Either } from "effect"
import type { RuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { type CompiledPolicy, compilePolicy, type PolicyCompileError } from "./policy.js"
import { type ImaVerificationInput, type ImaVerificationResult, verifyIma } from "./verify.js"

const CACHE_MAX = 256

export class ImaVerification extends Effect.Service<ImaVerification>()("attest/ima/ImaVerification", {
  succeed: (() => {
    const cache = new Map<string, CompiledPolicy>()
    return {
      /** Compile a policy; `key` (e.g. the stored sha256 checksum) lets repeated calls reuse the result. */
      compile: Effect.fn("ImaVerification.compile")(function*(policy: RuntimePolicy, key?: string) {
        const hit = key === undefined ? undefined : cache.get(key)
        if (hit !== undefined) return hit
        const compiled = yield* Either.match(compilePolicy(policy), {
          onLeft: (e): Effect.Effect<CompiledPolicy, PolicyCompileError> => Effect.fail(e),
          onRight: (c) => Effect.succeed(c)
        })
        if (key !== undefined) {
          if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
          cache.set(key, compiled)
        }
        return compiled
      }),
      /** Evaluate a list (chunk) from the agent's state; failures are values in the result. */
      verify: Effect.fn("ImaVerification.verify")(function*(input: ImaVerificationInput) {
        const result: ImaVerificationResult = verifyIma(input)
        yield* Effect.annotateCurrentSpan({ entries: result.entries, matched: result.matchedEntries, failures: result.failures.length })
        return result
      })
    }
  })()
}) {}
