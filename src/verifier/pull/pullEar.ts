/**
 * The EAR of a pull agent's latest verdict, signed when a relying party asks for it
 * (GET /v3/agents/<id>/attestations/latest with Accept: application/eat+jwt; src/verifier/http/v3/PushHttp.ts)
 * from the facts the pull loop stored with the verdict (src/ear/verdictFacts.ts). Its `iat` is the
 * verdict's time, not the request's: the token states an appraisal made then, and a relying party
 * judges its freshness by it.
 */
import { Either } from "effect"
import type { EarSigningKey } from "../../ear/key.js"
import { type EarOptions, signEar } from "../../ear/token.js"
import { earVerdictOfFacts, readVerdictFacts } from "../../ear/verdictFacts.js"

/** The signed token of the stored facts (`last_verdict`), or why there is none. */
export const signPullEar = (agentId: string, lastVerdict: string, key: EarSigningKey, options: EarOptions): Either.Either<string, string> =>
  Either.flatMap(readVerdictFacts(lastVerdict), (facts) =>
    Either.mapLeft(signEar(earVerdictOfFacts(agentId, facts), key, options, facts.at), (e) => e.message))
