/**
 * The two stateless checks behind the verifier's HTTP API: `verify/evidence` (the one evaluator from
 * an empty state, TEE reports through src/tee) and `verify/identity` (a quote against an agent's
 * stored AK). What they need from configuration is prepared once at start: the severity policy, the
 * measured-boot policy by `measured_boot_policy_name`, the VCEKs of `snp_vcek_dir` and the VCEK
 * chain cache. A setting that cannot be used stops start-up naming the option.
 */
import { Clock, Context, Data, Effect, Either, Option, Schedule } from "effect"
import type { VerifyIdentityQuery, VerifyIdentityResult } from "../../schemas/Evidence.js"
import { builtinMbPolicies, MbPolicyRegistry } from "../boot/policy.js"
import { VerifierConfig } from "../config/services.js"
import { isTransientSqlError, TRANSIENT_RETRY_DELAY } from "../db/transient.js"
import type { ApiVersion } from "../http/versions.js"
import { amdRoots, loadVcekDirectory, makeChainCache, type SnpRoots, verifyTeeEvidence } from "../tee/index.js"
import { recordAttestation } from "../ops/metrics.js"
import { evaluateTimed } from "../ops/stages.js"
import { fromBase64 } from "../tpm/bytes.js"
import { AgentNotFound } from "./errors.js"
import { severityPolicyFromOptions } from "./evaluate/severity.js"
import type { EvidenceRequestError } from "./evidenceRequest.js"
import { AgentRepo } from "./repo/AgentRepo.js"
import { type VerifyEvidenceAnswer, type VerifyEvidenceContext, verifyEvidenceRequest } from "./verifyEvidence.js"
import { parseIdentityQuery, verifyIdentity } from "./verifyIdentity.js"

/** A `[verifier]` option the stateless checks cannot use; the message names it. */
export class StatelessConfigError extends Data.TaggedError("StatelessConfigError")<{ readonly message: string }> {}

/**
 * The ARK/ASK pairs SEV-SNP VCEK chains must end in: AMD's (shipped in src/tee/snp/amdRoots.ts)
 * unless a deployment or a test with its own AMD-like chain provides others.
 */
export class SnpTrustRoots extends Context.Reference<SnpTrustRoots>()("attest/verifier/SnpTrustRoots", {
  defaultValue: (): SnpRoots => amdRoots()
}) {}

export class StatelessChecks extends Effect.Service<StatelessChecks>()("attest/verifier/StatelessChecks", {
  dependencies: [AgentRepo.Default],
  effect: Effect.gen(function*() {
    const config = yield* VerifierConfig
    const agents = yield* AgentRepo
    const severity = yield* Either.mapLeft(severityPolicyFromOptions(config), (e) => new StatelessConfigError({ message: e.message }))
    const measuredBootPolicy = yield* MbPolicyRegistry.make(builtinMbPolicies).get(config.measured_boot_policy_name).pipe(
      Effect.mapError((e) => new StatelessConfigError({ message: `[verifier] measured_boot_policy_name: ${e.message}` }))
    )
    const vcekDir = config.snp_vcek_dir === ""
      ? undefined
      : yield* loadVcekDirectory(config.snp_vcek_dir).pipe(
        Effect.mapError((e) => new StatelessConfigError({ message: `[verifier] snp_vcek_dir ${e.dir}: ${e.message}` }))
      )
    const chainCache = makeChainCache()
    const roots = yield* SnpTrustRoots
    const base: VerifyEvidenceContext = {
      severity,
      measuredBootPolicy,
      // Keylime's option is read inverted (src/config/sections.ts): true reports ToMToU entries
      reportTomtou: config.ignore_tomtou_errors
    }

    /** POST verify/evidence: the answer, or the input error (Http.ts picks status and text). */
    const evidence = (body: unknown, version: ApiVersion): Effect.Effect<VerifyEvidenceAnswer, EvidenceRequestError> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const ctx: VerifyEvidenceContext = {
          ...base,
          verifyTee: (data) =>
            verifyTeeEvidence(data, { now: new Date(now), chainCache, roots, ...(vcekDir === undefined ? {} : { vcekDir }) })
        }
        const judged = evaluateTimed((now) => verifyEvidenceRequest(body, version, { ...ctx, now }), (r) => Either.isRight(r) ? r.right.evaluation.stages : undefined)
        return Effect.flatMap(judged, (answer) =>
          Effect.tap(answer, ({ evaluation }) => recordAttestation("evidence", evaluation.failures.length === 0, evaluation.failures.map((f) => f.type))))
      }).pipe(Effect.withSpan("StatelessChecks.evidence"))

    /** GET verify/identity: the first missing parameter, an unknown agent, or the verdict. */
    const identity = Effect.fn("StatelessChecks.identity")(function*(query: VerifyIdentityQuery) {
      const req = yield* parseIdentityQuery(query)
      // a lost connection is tried once more (then the HTTP layer answers 503)
      const row = yield* Effect.retry(agents.find(req.agent_uuid), {
        schedule: Schedule.spaced(TRANSIENT_RETRY_DELAY),
        times: 1,
        while: (e) => isTransientSqlError(e.cause)
      })
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId: req.agent_uuid })
      const ak = fromBase64(row.value.ak_tpm) ?? new Uint8Array(0)
      const result: VerifyIdentityResult = verifyIdentity(ak, req)
      return result
    })

    return { evidence, identity } as const
  })
}) {}
