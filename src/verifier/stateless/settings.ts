/**
 * What the stateless checks need from configuration, prepared once: the severity policy, the
 * measured-boot policy by `measured_boot_policy_name`, the VCEKs of `snp_vcek_dir` and the VCEK
 * chain cache. The server prepares it at start (a setting that cannot be used stops start-up naming
 * the option) and every worker prepares its own from the same options.
 */
import { Data, Effect, Either } from "effect"
import { builtinMbPolicies, MbPolicyRegistry } from "../../boot/policy.js"
import { loadVcekDirectory, makeChainCache, type SnpRoots, verifyTeeEvidence } from "../../tee/index.js"
import { severityPolicyFromOptions } from "../../attestation/evaluate/severity.js"
import type { TeeVerifier } from "../../attestation/evaluate/types.js"
import { runtimePolicyOf, type VerifyEvidenceContext } from "./verifyEvidence.js"
import type { StatelessPolicyCache } from "./policyCache.js"

/** A `[verifier]` option the stateless checks cannot use; the message names it. */
export class StatelessConfigError extends Data.TaggedError("StatelessConfigError")<{ readonly message: string }> {}

export interface StatelessOptions {
  readonly severity_labels: ReadonlyArray<string>
  readonly severity_policy: string
  readonly measured_boot_policy_name: string
  readonly ignore_tomtou_errors: boolean
  readonly snp_vcek_dir: string
}

export interface StatelessSettings {
  /** The context without a clock or a TEE verifier. */
  readonly base: VerifyEvidenceContext
  /** The SEV-SNP verifier judging certificates at `now` (ms). */
  readonly verifyTee: (now: number) => TeeVerifier
}

export const statelessSettings = (options: StatelessOptions, roots: SnpRoots): Effect.Effect<StatelessSettings, StatelessConfigError> =>
  Effect.gen(function*() {
    const severity = yield* Either.mapLeft(severityPolicyFromOptions(options), (e) => new StatelessConfigError({ message: e.message }))
    const measuredBootPolicy = yield* MbPolicyRegistry.make(builtinMbPolicies).get(options.measured_boot_policy_name).pipe(
      Effect.mapError((e) => new StatelessConfigError({ message: `[verifier] measured_boot_policy_name: ${e.message}` }))
    )
    const vcekDir = options.snp_vcek_dir === ""
      ? undefined
      : yield* loadVcekDirectory(options.snp_vcek_dir).pipe(
        Effect.mapError((e) => new StatelessConfigError({ message: `[verifier] snp_vcek_dir ${e.dir}: ${e.message}` }))
      )
    const chainCache = makeChainCache()
    return {
      // Keylime's option is read inverted (src/config/sections.ts): true reports ToMToU entries
      base: { severity, measuredBootPolicy, reportTomtou: options.ignore_tomtou_errors },
      verifyTee: (now) => (data) => verifyTeeEvidence(data, { now: new Date(now), chainCache, roots, ...(vcekDir === undefined ? {} : { vcekDir }) })
    }
  })

/**
 * One request's context: SEV-SNP certificates judged at `teeNow` (the server's wall clock, ms),
 * stages timed by `clock`, runtime policies compiled through `cache`. The server's thread and the
 * workers build it alike.
 */
export const judgingContext = (settings: StatelessSettings, cache: StatelessPolicyCache, teeNow: number, clock: () => number): VerifyEvidenceContext => ({
  ...settings.base,
  verifyTee: settings.verifyTee(teeNow),
  now: clock,
  compileRuntimePolicy: (text) => cache.compile(text, runtimePolicyOf)
})
