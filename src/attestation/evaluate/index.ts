/**
 * attest/evaluate: the evidence evaluator, one pure judgement for the pull loop, push attestations
 * and verify/evidence, and `evaluateEvidenceSettled`, its variant with every signature answered
 * (the portable crypto port's RSA checks are WebCrypto's). Portable: imports no Node built-in.
 */
export * from "./algorithms.js"
export * from "./clock.js"
export * from "./evaluate.js"
export * from "./failures.js"
export { emptyCompiledPolicy } from "./ima.js"
export { isEmptyRefState } from "./measuredBoot.js"
export * from "./pcrs.js"
export * from "./quote.js"
export * from "./settled.js"
export * from "./severity.js"
export * from "./state.js"
export * from "./tpmPolicy.js"
export * from "./types.js"
