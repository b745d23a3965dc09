/**
 * attest/verifier: the pure heart of the verifier. `evaluateEvidence` judges one attestation's
 * evidence (quote, PCR 16 binding, tpm_policy, IMA from the stored offset, measured boot) for the
 * pull loop, push attestations and verify/evidence; `verifyEvidenceRequest` and `verifyIdentity`
 * are the request logic of the two stateless endpoints.
 */
export * from "./evaluate/index.js"
export * from "./evidenceRequest.js"
export * from "./pythonJson.js"
export * from "./verifyEvidence.js"
export * from "./verifyIdentity.js"
