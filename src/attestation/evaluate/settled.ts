/**
 * The evaluator with every signature check answered: `evaluateEvidence` stays a pure synchronous
 * function; this is its asynchronous variant for the portable crypto port (browsers, workers, edge
 * runtimes), where RSA signatures are WebCrypto's. With node:crypto it is the same evaluation.
 */
import { settleSignatures } from "../../crypto/active.js"
import { evaluateEvidence } from "./evaluate.js"

export const evaluateEvidenceSettled = (...args: Parameters<typeof evaluateEvidence>): Promise<ReturnType<typeof evaluateEvidence>> =>
  settleSignatures(() => evaluateEvidence(...args))
