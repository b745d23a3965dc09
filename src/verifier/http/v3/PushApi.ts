/**
 * The verifier's API 3.0 (push model) routes, served under `/v3` (the platform maps `/v3[.m]/…`
 * there and answers them in JSON:API); the agent administration routes (GET, PATCH, DELETE
 * /agents/:id, stop, reactivate, policies) are http/v3/AdminApi.ts. Bodies are read by the handlers (http/v3/documents.ts: 415,
 * 400 and 422 with pointers), so the payload schemas here document the wire only.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AttestationCreateDocument, AttestationEvidenceDocument, SessionCreateDocument, SessionUpdateDocument } from "../../../../schemas/Push.js"
import { V3_ROUTE_PREFIX } from "../../../http/versions.js"
import { V3Authorization } from "../authorization.js"

const AgentPath = Schema.Struct({ agent_id: Schema.String })
const AttestationPath = Schema.Struct({ agent_id: Schema.String, index: Schema.String })
const SessionPath = Schema.Struct({ session_id: Schema.String })

export class PushGroup extends HttpApiGroup.make("push")
  .add(HttpApiEndpoint.get("root", "/").annotate(OpenApi.Summary, "API 3.0 is served (public)"))
  .add(HttpApiEndpoint.post("createSession", "/sessions").setPayload(SessionCreateDocument).annotate(OpenApi.Summary, "Start a PoP session: a challenge for TPM2_Certify (public, rate limited)"))
  .add(
    HttpApiEndpoint.patch("updateSession", "/sessions/:session_id").setPath(SessionPath).setPayload(SessionUpdateDocument)
      .annotate(OpenApi.Summary, "Answer the challenge with the AK's certify proof → bearer token; or extend with the token (public)")
  )
  .add(
    HttpApiEndpoint.post("createAttestation", "/agents/:agent_id/attestations").setPath(AgentPath).setPayload(AttestationCreateDocument)
      .annotate(OpenApi.Summary, "Phase 1: capabilities → evidence requested and a challenge, 201 with Location (the agent itself)")
  )
  .add(
    HttpApiEndpoint.patch("submitEvidence", "/agents/:agent_id/attestations/:index").setPath(AttestationPath).setPayload(AttestationEvidenceDocument)
      .annotate(OpenApi.Summary, "Phase 2: evidence for attestation <index> or latest, 202, verified in the background (the agent itself)")
  )
  .add(HttpApiEndpoint.get("listAttestations", "/agents/:agent_id/attestations").setPath(AgentPath).annotate(OpenApi.Summary, "Every attestation of an agent (admin)"))
  .add(HttpApiEndpoint.get("showAttestation", "/agents/:agent_id/attestations/:index").setPath(AttestationPath).annotate(OpenApi.Summary, "Attestation <index> or latest (admin)").annotate(
    OpenApi.Description,
    "With `Accept: application/eat+jwt` the verdict as an EAR (ES256 JWT, keys at GET /.well-known/ear-jwks.json); for a pull agent, `latest` is the EAR of its last pull verdict"
  ))
  .prefix(V3_ROUTE_PREFIX)
  .middleware(V3Authorization)
{}
