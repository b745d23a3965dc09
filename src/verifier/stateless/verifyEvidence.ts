/**
 * POST verify/evidence (spec §2.5, §9): stateless verification of third-party evidence with the
 * one evaluator, from an empty state. The policies come with the request, so they are parsed and
 * compiled here, per request; a policy that cannot be used is an input error naming it. Unlike
 * Keylime, a quote whose signature does not verify is never valid (its captured exchange
 * `ver-evidence-wrong-ak` answers `valid: true`).
 */
import { Either, Schema } from "effect"
import { makeFailure, type VerifyEvidenceResult, type VerifyEvidenceResultV24 } from "../../../schemas/Evidence.js"
import { decodeRuntimePolicyJson } from "../../../schemas/RuntimePolicy.js"
import { compileAgentPolicy } from "../../attestation/compileAgentPolicy.js"
import { utf8, utf8Bytes } from "../../crypto/encoding.js"
import type { MbPolicy } from "../../boot/policy.js"
import { decodeDsseEnvelopeJson } from "../../ima/dsse.js"
import { type CompiledPolicy, compilePolicy } from "../../ima/policy.js"
import type { ApiVersion } from "../../http/versions.js"
import { atLeast } from "../../http/versions.js"
import { fromBase64 } from "../../tpm/bytes.js"
import { evaluateEvidence } from "../../attestation/evaluate/evaluate.js"
import { VerifierFailureType } from "../../attestation/evaluate/failures.js"
import type { SeverityPolicy } from "../../attestation/evaluate/severity.js"
import { initialEvaluationState } from "../../attestation/evaluate/state.js"
import { emptyTpmPolicy } from "../../attestation/evaluate/tpmPolicy.js"
import type { AgentPolicy, EvaluateOptions, Evaluation, StageClock, TeeVerifier } from "../../attestation/evaluate/types.js"
import {
  EvidenceInputInvalid,
  type EvidenceRequest,
  type EvidenceRequestError,
  parseEvidenceRequest,
  type TpmEvidenceRequest
} from "./evidenceRequest.js"

export interface VerifyEvidenceContext {
  readonly severity: SeverityPolicy
  /** The policy named by `[verifier] measured_boot_policy_name` (Keylime's default: accept-all). */
  readonly measuredBootPolicy: MbPolicy
  readonly reportTomtou: boolean
  /** The SEV-SNP module's verifier for `type: tee`; without it TEE evidence is never valid. */
  readonly verifyTee?: TeeVerifier | undefined
  /** A monotonic clock: the evaluation reports when each stage ran (src/ops/stages.ts). */
  readonly now?: StageClock | undefined
  /**
   * How the request's runtime policy text becomes a compiled policy: `runtimePolicyOf` unless a
   * caller caches it (the workers of src/verifier/stateless/ compile a policy once by its hash).
   */
  readonly compileRuntimePolicy?: ((text: string) => Either.Either<CompiledPolicy, EvidenceInputInvalid>) | undefined
}

export interface VerifyEvidenceAnswer {
  /** The `results` of the 200 answer: boolean `valid` and `claims` from 2.5, integer `valid` in 2.4. */
  readonly results: VerifyEvidenceResult | VerifyEvidenceResultV24
  /** The full evaluation (verified claims, severities) for logs; not part of the answer. */
  readonly evaluation: Evaluation
}

const invalidParam = (name: string, reason: string): EvidenceInputInvalid =>
  new EvidenceInputInvalid({ failures: [makeFailure(VerifierFailureType.invalidParam, `invalid parameter "${name}": ${reason}`, { parameter: name })] })

/** A runtime policy as JSON text, or a DSSE envelope around it (whose signature Keylime does not check here either). */
export const runtimePolicyOf = (text: string): Either.Either<CompiledPolicy, EvidenceInputInvalid> => {
  let json = text
  const env = decodeDsseEnvelopeJson(text)
  if (Either.isRight(env)) {
    const payload = fromBase64(env.right.payload)
    if (payload === undefined) return Either.left(invalidParam("runtime_policy", "the DSSE payload is not base64"))
    json = utf8(payload)
  }
  const decoded = decodeRuntimePolicyJson(json)
  if (Either.isLeft(decoded)) return Either.left(invalidParam("runtime_policy", `is not a runtime policy: ${decoded.left.message}`))
  return Either.mapLeft(compilePolicy(decoded.right), (e) => invalidParam("runtime_policy", e.message))
}

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

const refstateOf = (text: string): Either.Either<unknown, EvidenceInputInvalid> =>
  Either.mapLeft(decodeJson(text), (e) => invalidParam("mb_policy", `is not JSON: ${e.message}`))

const statelessOptions = (ctx: VerifyEvidenceContext): EvaluateOptions => ({
  severity: ctx.severity,
  measuredBootEvaluate: "always",
  reportTomtou: ctx.reportTomtou,
  // Keylime's one-shot check has no NK to bind and no previous quote to compare clocks with.
  bindNk: false,
  checkClock: false
})

/** `claims`: what a 2.5 answer carries (for tpm: the submitted data when valid, `{}` otherwise). */
const answerOf = (evaluation: Evaluation, claims: Readonly<Record<string, unknown>>, version: ApiVersion): VerifyEvidenceAnswer => {
  const valid = evaluation.failures.length === 0
  const results = atLeast(version, "2.5")
    ? { valid, claims, failures: evaluation.failures }
    : { valid: valid ? (1 as const) : (0 as const), failures: evaluation.failures }
  return { results, evaluation }
}

const teePolicy = (ctx: VerifyEvidenceContext): AgentPolicy => ({
  ak: new Uint8Array(0),
  tpmPolicy: emptyTpmPolicy,
  verifyTee: ctx.verifyTee,
  options: statelessOptions(ctx)
})

const verifyTpm = (req: TpmEvidenceRequest, version: ApiVersion, ctx: VerifyEvidenceContext): Either.Either<VerifyEvidenceAnswer, EvidenceInputInvalid> => {
  let runtimePolicy: CompiledPolicy | undefined
  if (req.runtime_policy !== undefined) {
    const p = (ctx.compileRuntimePolicy ?? runtimePolicyOf)(req.runtime_policy)
    if (Either.isLeft(p)) return Either.left(p.left)
    runtimePolicy = p.right
  }
  let refstate: unknown
  if (req.mb_policy !== undefined) {
    const r = refstateOf(req.mb_policy)
    if (Either.isLeft(r)) return Either.left(r.left)
    refstate = r.right
  }
  const compiled = compileAgentPolicy(
    { agentId: "", akTpm: req.tpm_ak, tpmPolicy: req.tpm_policy, imaSignVerificationKeys: undefined, accept: undefined },
    { runtime: runtimePolicy, ...(req.mb_policy === undefined ? {} : { refstate }) },
    {
      model: "evidence",
      severity: ctx.severity,
      measuredBootPolicyName: ctx.measuredBootPolicy.name,
      measuredBootPolicy: ctx.measuredBootPolicy,
      measuredBootEvaluate: "always",
      reportTomtou: ctx.reportTomtou
    }
  )
  if (Either.isLeft(compiled)) return Either.left(invalidParam(compiled.left.field === "ak_tpm" ? "tpm_ak" : compiled.left.field, compiled.left.reason))
  const policy = compiled.right
  const evaluation = evaluateEvidence(
    {
      _tag: "tpm",
      nonce: utf8Bytes(req.nonce),
      quote: req.quote,
      hash_alg: req.hash_alg,
      // Keylime checks the list whenever PCR 10 is quoted; an absent list is an empty one here.
      ima_measurement_list: req.ima_measurement_list ?? "",
      mb_measurement_list: req.mb_log
    },
    policy,
    initialEvaluationState,
    ctx.now
  )
  return Either.right(answerOf(evaluation, evaluation.failures.length === 0 ? req.data : {}, version))
}

const verifyTee = (data: Readonly<Record<string, unknown>>, version: ApiVersion, ctx: VerifyEvidenceContext): Either.Either<VerifyEvidenceAnswer, EvidenceInputInvalid> => {
  const evaluation = evaluateEvidence({ _tag: "tee", data }, teePolicy(ctx), initialEvaluationState)
  // As Keylime: a TEE verifier's missing/bad parameter is an input error.
  if (evaluation.failures.some((f) => f.type.endsWith(".missing_param") || f.type.endsWith(".missing_policy"))) {
    return Either.left(new EvidenceInputInvalid({ failures: evaluation.failures }))
  }
  // TEE claims are the TEE verifier's, valid or not (Keylime returns them as they come).
  return Either.right(answerOf(evaluation, evaluation.claims?.type === "tee" ? evaluation.claims.claims : {}, version))
}

/** The whole request: the decoded JSON body and the API version it came in → the answer, or an input error. */
export const verifyEvidenceRequest = (
  body: unknown,
  version: ApiVersion,
  ctx: VerifyEvidenceContext
): Either.Either<VerifyEvidenceAnswer, EvidenceRequestError> =>
  Either.flatMap(parseEvidenceRequest(body), (req: EvidenceRequest) =>
    req._tag === "tpm" ? verifyTpm(req, version, ctx) : verifyTee(req.data, version, ctx)
  )

/** The `results` Keylime puts beside an input error's "Bad Request" (the other input errors carry `{}`). */
export const inputErrorResults = (e: EvidenceRequestError, version: ApiVersion): Readonly<Record<string, unknown>> => {
  if (e._tag !== "EvidenceInputInvalid") return {}
  return atLeast(version, "2.5") ? { valid: false, claims: {}, failures: e.failures } : { valid: 0, failures: e.failures }
}
