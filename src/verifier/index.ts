/**
 * attest/verifier: the pure heart of the verifier. `evaluateEvidence` judges one attestation's
 * evidence (quote, PCR 16 binding, tpm_policy, IMA from the stored offset, measured boot) for the
 * pull loop, push attestations and verify/evidence; `verifyEvidenceRequest` and `verifyIdentity`
 * are the request logic of the two stateless endpoints. `Verifier(section, poller?)` is the whole
 * verifier (HTTPS API, database, TLS, metrics listener) as a Layer, `verifierOptions({...})` a section
 * from defaults, `VerifierApi` its HttpApi for clients:
 *
 *   Layer.launch(Verifier(verifierOptions({ port: 8881, tls_dir: "generate", ca_dir: "/var/lib/attest/cv_ca" })))
 */
export * from "../attestation/evaluate/index.js"
export * from "./stateless/evidenceRequest.js"
export * from "../attestation/pythonJson.js"
export * from "./stateless/verifyEvidence.js"
export * from "./stateless/verifyIdentity.js"

// --- the verifier as a service another Effect app can embed -----------------------------------
export { VerifierApi, VERIFIER_UNVERSIONED } from "./http/Api.js"
export { VerifierDomainLive, VerifierServerLive, type VerifierServerOptions } from "./Server.js"
export { VerifierFromConfig as Verifier, verifierOptions, verifierServerOptions } from "./fromConfig.js"
export { PollerControl, type PollerControlShape } from "./domain/PollerControl.js"

// --- for attest/testing (src/testing/): the parts a fleet in one process assembles itself -------
// (the pull loop over another AgentClient, the repositories it decorates to log verdicts, the push
// protocol's services it calls without HTTP).
export { AgentClient, type AgentClientShape, AgentRequestFailed, type AgentTarget } from "./pull/AgentClient.js"
export { networkProblem, quoteAnswer, quotePath, type RequestProblem } from "./pull/quoteRequest.js"
export { pollerLayer } from "./pull/Poller.js"
export { NotifiersLive } from "./pull/NotifiersLive.js"
export { Agents } from "./domain/Agents.js"
export { AgentRepo } from "./domain/repo/AgentRepo.js"
export { MbPolicyRepo, RuntimePolicyRepo } from "./domain/repo/PolicyRepo.js"
export { NotificationOutbox } from "./domain/repo/NotificationOutbox.js"
export { PolicyCache } from "./domain/policy/PolicyCache.js"
export { PushRepo } from "./domain/pushStore/repo.js"
export { Attestations, requestedOf } from "./push/Attestations.js"
export { Sessions } from "./push/Sessions.js"
export { Liveness } from "./push/Liveness.js"
export { SessionSweep } from "./push/SessionSweep.js"
export { OperationalState, stateName } from "../attestation/states.js"
