/**
 * The two stateless checks behind the verifier's HTTP API: `verify/evidence` (the one evaluator from
 * an empty state, TEE reports through src/tee) and `verify/identity` (a quote against an agent's
 * stored AK). Both are judged by the worker pool of src/verifier/stateless/ (issue 22: parsing,
 * compiling and evaluating a request's policies on the event loop that serves agents let anyone
 * starve attestation) — all but verify/evidence bodies up to `verify_inline_max_body_size`, judged
 * on this thread because the hop would cost more than their judging and their size bounds what one
 * can take from the loop; every request, judged here or there, first takes a place in the same
 * bounded admission. This service admits requests, looks up the agent for verify/identity and
 * records the metrics. The settings are checked at start here too: one that cannot be used
 * stops start-up naming the option.
 */
import { Clock, Context, Effect, Option, type Scope } from "effect"
import type { VerifyIdentityQuery, VerifyIdentityResult } from "../../../schemas/Evidence.js"
import { VerifierConfig } from "../../config/services.js"
import { isTransientSqlError, retryOnceWhen } from "../../db/transient.js"
import type { ApiVersion } from "../../http/versions.js"
import { amdRoots, type SnpRoots } from "../../tee/index.js"
import { recordAttestation } from "../../ops/metrics.js"
import { recordStages } from "../../ops/stages.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { AgentNotFound } from "../domain/errors.js"
import { AgentRepo } from "../domain/repo/AgentRepo.js"
import { type EvidenceJudgement, judgeEvidence } from "./judgeEvidence.js"
import { makeStatelessPool, type StatelessBusy, type StatelessWorkerFailed } from "./pool.js"
import { makeStatelessPolicyCache } from "./policyCache.js"
import { judgingContext, statelessSettings } from "./settings.js"
import { parseIdentityQuery } from "./verifyIdentity.js"

export { StatelessConfigError } from "./settings.js"
export { StatelessBusy, StatelessWorkerFailed } from "./pool.js"

/**
 * The ARK/ASK pairs SEV-SNP VCEK chains must end in: AMD's (shipped in src/tee/snp/amdRoots.ts)
 * unless a deployment or a test with its own AMD-like chain provides others.
 */
export class SnpTrustRoots extends Context.Reference<SnpTrustRoots>()("attest/verifier/SnpTrustRoots", {
  defaultValue: (): SnpRoots => amdRoots()
}) {}

export class StatelessChecks extends Effect.Service<StatelessChecks>()("attest/verifier/StatelessChecks", {
  dependencies: [AgentRepo.Default],
  scoped: Effect.gen(function*() {
    const config = yield* VerifierConfig
    const agents = yield* AgentRepo
    const roots = yield* SnpTrustRoots
    // the workers read the same options: what they cannot use stops start-up here
    const settings = yield* statelessSettings(config, roots)
    const pool = yield* makeStatelessPool(config, roots)
    // small bodies are judged here: the hop to a worker costs more than their judging, and their
    // bound keeps what one request can take from the loop to a few milliseconds
    const inlineCache = makeStatelessPolicyCache(config.verify_policy_cache_size)
    const judgeHere = (body: Uint8Array, version: ApiVersion, wantsEar: boolean) =>
      Effect.map(Clock.currentTimeMillis, (now) => judgeEvidence(body, version, wantsEar, judgingContext(settings, inlineCache, now, () => performance.now())))

    /** A place among those judged and waiting until the scope closes; StatelessBusy when none is free. */
    const admit: Effect.Effect<void, StatelessBusy, Scope.Scope> = pool.admit

    /** POST verify/evidence, the body as received: the answer's status and envelope (Http.ts writes it). */
    const evidence = (body: Uint8Array, version: ApiVersion, wantsEar: boolean): Effect.Effect<EvidenceJudgement, StatelessWorkerFailed> =>
      (body.byteLength <= config.verify_inline_max_body_size ? judgeHere(body, version, wantsEar) : pool.evidence(body, version, wantsEar)).pipe(
        Effect.tap(({ verdict }) =>
          verdict === undefined ? Effect.void : Effect.zipRight(recordStages(verdict.stages), recordAttestation("evidence", verdict.valid, verdict.failureTypes))),
        Effect.withSpan("StatelessChecks.evidence")
      )

    /** GET verify/identity: the first missing parameter, an unknown agent, or the verdict. */
    const identity = Effect.fn("StatelessChecks.identity")(function*(query: VerifyIdentityQuery) {
      const req = yield* parseIdentityQuery(query)
      // a lost connection is tried once more (then the HTTP layer answers 503)
      const row = yield* retryOnceWhen((e: { readonly cause?: unknown }) => isTransientSqlError(e.cause))(agents.find(req.agent_uuid))
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId: req.agent_uuid })
      const ak = fromBase64(row.value.ak_tpm) ?? new Uint8Array(0)
      const result: VerifyIdentityResult = yield* Effect.scoped(Effect.zipRight(admit, pool.identity(ak, req)))
      return result
    })

    return { admit, evidence, identity, workers: pool.workers, capacity: pool.capacity } as const
  })
}) {}
