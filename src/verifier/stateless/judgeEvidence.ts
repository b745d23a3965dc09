/**
 * One POST verify/evidence, whole: the request body's bytes, the API version and the settings in;
 * the answer's status and envelope bytes out (with what the caller records: validity, failure
 * types, stage timings, and the EAR verdict when one was asked for). Pure and synchronous: the
 * workers (statelessWorker.ts) run it off the event loop that serves agents, and anything that
 * replaces how policies are compiled plugs in through `VerifyEvidenceContext` without touching
 * the worker plumbing. The texts are the HTTP layer's (src/verifier/http/v2/Http.ts answered them before).
 */
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import { BadRequest, BadRequestE, BadRequestWithResults, BadRequestWithResultsE, Envelope, StatusText } from "../../../schemas/Envelope.js"
import { EvidenceResults } from "../../../schemas/Evidence.js"
import { type EarVerdict, fromEvaluation } from "../../ear/appraisal.js"
import { DEFAULT_MAX_JSON_DEPTH, jsonDepthExceeds } from "../../http/body.js"
import type { ApiVersion } from "../../http/versions.js"
import type { StageTiming } from "../../attestation/evaluate/types.js"
import type { EvidenceRequestError } from "./evidenceRequest.js"
import { VerifierText } from "../domain/texts.js"
import { inputErrorResults, type VerifyEvidenceContext, verifyEvidenceRequest } from "./verifyEvidence.js"

/** What one request came to. */
export interface EvidenceJudgement {
  readonly status: number
  /** The answer's JSON envelope (`{code, status, results}`), UTF-8. */
  readonly body: Uint8Array
  /** Present when the evidence was judged (a 200): what metrics and logs record. */
  readonly verdict?: {
    readonly valid: boolean
    readonly failureTypes: ReadonlyArray<string>
    readonly stages: ReadonlyArray<StageTiming>
    /** With `wantsEar`: the verdict an EAR is signed from (the signing key stays with the server). */
    readonly ear?: EarVerdict | undefined
  } | undefined
}

const encoder = new TextEncoder()
const json = (status: number, value: unknown): EvidenceJudgement => ({ status, body: encoder.encode(JSON.stringify(value)) })

const encodeSuccess = Schema.encodeSync(Envelope(EvidenceResults))
const encodeBadRequest = Schema.encodeSync(BadRequestE)
const encodeBadRequestWithResults = Schema.encodeSync(BadRequestWithResultsE)

const badRequest = (message: string) => json(400, encodeBadRequest(new BadRequest({ message })))

const inputError = (e: EvidenceRequestError, version: ApiVersion): EvidenceJudgement => {
  switch (e._tag) {
    case "EvidenceParameterMissing":
      return badRequest(VerifierText.missingParameter(e.name))
    case "EvidenceTypeInvalid":
      return badRequest(VerifierText.invalidEvidenceType)
    case "EvidenceInputInvalid":
      return json(400, encodeBadRequestWithResults(new BadRequestWithResults({ message: VerifierText.badRequest, results: inputErrorResults(e, version) })))
  }
}

/** The EAR's subject: the TPM AK's SHA-256, or "tee". */
const earVerdictOf = (body: unknown, evaluation: Parameters<typeof fromEvaluation>[1]): EarVerdict => {
  const data = (body as { data?: Record<string, unknown> }).data ?? {}
  const nonce = typeof data["nonce"] === "string" ? data["nonce"] : undefined
  const subject = typeof data["tpm_ak"] === "string" ? `tpm-ak:sha256:${createHash("sha256").update(data["tpm_ak"]).digest("hex")}` : "tee"
  return fromEvaluation(subject, evaluation, nonce === undefined ? {} : { nonce })
}

/** The body as the platform reads others: UTF-8, not empty, nested at most `maxDepth`, JSON. */
const parseBody = (bytes: Uint8Array, maxDepth: number): Either.Either<unknown, EvidenceJudgement> => {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")
  if (text.trim() === "") return Either.left(badRequest(VerifierText.emptyBody))
  if (jsonDepthExceeds(text, maxDepth)) return Either.left(badRequest(StatusText.tooDeep(maxDepth)))
  return Either.try({
    try: () => JSON.parse(text) as unknown,
    catch: (e) => badRequest(StatusText.malformedJson(e instanceof Error ? e.message : String(e)))
  })
}

export const judgeEvidence = (
  bytes: Uint8Array,
  version: ApiVersion,
  wantsEar: boolean,
  ctx: VerifyEvidenceContext,
  maxDepth = DEFAULT_MAX_JSON_DEPTH
): EvidenceJudgement => {
  const body = parseBody(bytes, maxDepth)
  if (Either.isLeft(body)) return body.left
  const answer = verifyEvidenceRequest(body.right, version, ctx)
  if (Either.isLeft(answer)) return inputError(answer.left, version)
  const { evaluation, results } = answer.right
  const verdict = {
    valid: evaluation.failures.length === 0,
    failureTypes: evaluation.failures.map((f) => f.type),
    stages: evaluation.stages ?? [],
    ear: wantsEar ? earVerdictOf(body.right, evaluation) : undefined
  }
  return { ...json(200, encodeSuccess(results)), verdict }
}
