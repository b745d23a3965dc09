/**
 * Attestation results as EAR (draft-ietf-rats-ear): `fromEvaluation`/`fromPlainVerdict` (a
 * verdict), `issueEar`/`signEar` (the signed JWT), `verifyEar` (a relying party's check),
 * `earKeyFromSection`/`jwksDocument`/`jwksResponse` (the verifier's key and its publication).
 * The verifying side alone, without node, is attest/ear (src/ear/portable.ts).
 */
export * from "./appraisal.js"
export * from "./key.js"
export * from "./token.js"
