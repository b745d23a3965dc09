/**
 * What the pull loop keeps of each verdict so the verifier can sign its EAR later, on request
 * (signing every verdict would cost an ES256 signature per attestation): the time the quote was
 * received, the nonce it answered, one failure per type (the type decides the status and the
 * trustworthiness vector; its first message explains it), which checks ran, and whether the
 * severity policy stops polling. Stored as JSON in `verifier_agents.last_verdict` (migration 0023).
 */
import { Either, Schema } from "effect"
import type { Evaluation } from "../attestation/evaluate/types.js"
import { type EarVerdict, fromEvaluation } from "./appraisal.js"

export const VerdictFacts = Schema.Struct({
  /** Epoch seconds: when the quote was received (the EAR's `iat`: the appraisal's time). */
  at: Schema.Number,
  nonce: Schema.String,
  failures: Schema.Array(Schema.Struct({ type: Schema.String, message: Schema.String })),
  appraised: Schema.Struct({ quote: Schema.Boolean, ima: Schema.Boolean, boot: Schema.Boolean, tee: Schema.Boolean }),
  stop_polling: Schema.Boolean
})
export type VerdictFacts = typeof VerdictFacts.Type

const decodeFacts = Schema.decodeUnknownEither(Schema.parseJson(VerdictFacts))

/** One failure per type: an IMA list can fail on thousands of entries with one type. */
const firstOfEachType = (failures: Evaluation["failures"]): VerdictFacts["failures"] => {
  if (failures.length === 0) return []
  const seen = new Map<string, string>()
  for (const f of failures) if (!seen.has(f.type)) seen.set(f.type, f.context.message)
  return [...seen].map(([type, message]) => ({ type, message }))
}

/** The facts of one pull verdict, as the JSON the loop stores. */
export const verdictFactsJson = (evaluation: Pick<Evaluation, "failures" | "severity" | "claims">, nonce: string, at: number): string => {
  const v = fromEvaluation("", evaluation)
  const facts: VerdictFacts = {
    at,
    nonce,
    failures: firstOfEachType(evaluation.failures),
    appraised: { quote: v.appraised.quote === true, ima: v.appraised.ima === true, boot: v.appraised.boot === true, tee: v.appraised.tee === true },
    stop_polling: evaluation.severity.stopPolling
  }
  return JSON.stringify(facts)
}

/** The stored facts back, or a message saying why they do not decode. */
export const readVerdictFacts = (json: string): Either.Either<VerdictFacts, string> =>
  Either.mapLeft(decodeFacts(json), (e) => `the stored verdict does not decode: ${e.message.split("\n")[0]}`)

/** The verdict the facts describe, for `signEar` (subject: the agent). */
export const earVerdictOfFacts = (agentId: string, facts: VerdictFacts): EarVerdict => ({
  agentId,
  failures: facts.failures.map((f) => ({ type: f.type, context: { message: f.message } })),
  appraised: facts.appraised,
  stopPolling: facts.stop_polling,
  nonce: facts.nonce
})
