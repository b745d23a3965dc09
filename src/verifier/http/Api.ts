/**
 * The verifier's HTTP API: every group it serves, assembled here and only here (the push model's
 * API 3.0 groups are added to `VerifierApi` in this file too). Routes are written without a version
 * prefix: the platform strips `/v2.x` (src/http/versions.ts), so one set of routes serves 2.0–2.6,
 * and handlers read the version from `currentApiVersion`. The tenant and tests derive their client
 * from `VerifierApi` with `HttpApiClient`; docs/openapi/verifier.json is generated from it.
 */
import { HttpApi } from "@effect/platform"
import { VerifierAgentsGroup, VerifierVersionGroup } from "./v2/api/agents.js"
import { VerifierAllowlistsGroup, VerifierMbPoliciesGroup } from "./v2/api/policies.js"
import { VerifierVerifyGroup } from "./v2/api/verify.js"
import { ServerRootGroup, V3AdminGroup } from "./v3/AdminApi.js"
import { PushGroup } from "./v3/PushApi.js"

export { AgentPath, VerifierAgentsGroup, VerifierVersionGroup } from "./v2/api/agents.js"
export { PolicyPath, VerifierAllowlistsGroup, VerifierMbPoliciesGroup } from "./v2/api/policies.js"
export { VerifierVerifyGroup } from "./v2/api/verify.js"
export { EvidenceResults } from "../../../schemas/Evidence.js"

export class VerifierApi extends HttpApi.make("verifier")
  .add(VerifierVersionGroup)
  .add(VerifierAgentsGroup)
  .add(VerifierAllowlistsGroup)
  .add(VerifierMbPoliciesGroup)
  .add(VerifierVerifyGroup)
  // API 3.0 (push model): routes under /v3, answered in JSON:API
  .add(PushGroup)
  .add(V3AdminGroup)
  // GET /: the redirect to /v3.0/
  .add(ServerRootGroup)
{}

/** Paths the verifier serves without a version prefix. */
export const VERIFIER_UNVERSIONED: ReadonlyArray<string> = ["/", "/version", "/versions", "/openapi.json", "/.well-known/ear-jwks.json"]
