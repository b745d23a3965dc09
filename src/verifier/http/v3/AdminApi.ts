/**
 * API 3.0 administration routes (spec §4.4), served under `/v3` in JSON:API: agents, IMA policies
 * (`/policies/ima`) and UEFI reference states (`/refstates/uefi`). Keylime answers 404 for these
 * (push-model.md §0.5, §1.2); attest serves them over the v2 domain. Everything is admin (mTLS)
 * but GET /agents/:id, which the agent itself may read with its token. Bodies are read by the
 * handlers (http/v3/documents.ts: 415, 400, 422 with pointers): the payload schemas document the wire.
 * Also `GET /`, unversioned: the redirect to `/v3.0/` Keylime answers.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AgentCreateDocument, AgentPatchDocument, ImaPolicyDocument, UefiRefstateDocument } from "../../../../schemas/V3Admin.js"
import { V3_ROUTE_PREFIX } from "../../../http/versions.js"
import { V3Authorization } from "../authorization.js"

const AgentPath = Schema.Struct({ agent_id: Schema.String })
const NamePath = Schema.Struct({ name: Schema.String })

export class V3AdminGroup extends HttpApiGroup.make("v3admin")
  .add(HttpApiEndpoint.get("listAgents", "/agents").annotate(OpenApi.Summary, "Every agent as an `agent` resource (admin)"))
  .add(
    HttpApiEndpoint.post("createAgent", "/agents").setPayload(AgentCreateDocument)
      .annotate(OpenApi.Summary, "Enrol an agent: `data.id` is its id, the attributes a v2 creation body, checked as v2 does; 201 with Location (admin)")
  )
  .add(
    HttpApiEndpoint.get("showAgent", "/agents/:agent_id").setPath(AgentPath)
      .annotate(OpenApi.Summary, "An agent: its 2.6 status, policy names and push state (the agent itself with its token, or admin)")
  )
  .add(
    HttpApiEndpoint.patch("updateAgent", "/agents/:agent_id").setPath(AgentPath).setPayload(AgentPatchDocument)
      .annotate(
        OpenApi.Summary,
        "Change an agent's configuration: cloudagent_ip/port, tpm_policy, vtpm_policy, metadata, ima_sign_verification_keys, revocation_key, " +
          "accept_tpm_*_algs, mtls_cert, supported_version, runtime_policy_name and mb_policy_name (stored policies), accept_attestations " +
          "(push agents); each checked as at creation; not ak_tpm, v or inline policies (admin)"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteAgent", "/agents/:agent_id").setPath(AgentPath)
      .annotate(OpenApi.Summary, "Delete an agent: 204, or 202 when the verifier process polling it deletes it (admin)")
  )
  .add(HttpApiEndpoint.put("stopAgent", "/agents/:agent_id/stop").setPath(AgentPath).annotate(OpenApi.Summary, "Stop attesting an agent (TENANT_FAILED), 204 (admin)"))
  .add(
    HttpApiEndpoint.put("reactivateAgent", "/agents/:agent_id/reactivate").setPath(AgentPath)
      .annotate(OpenApi.Summary, "Attest an agent again: a pull agent from a fresh cycle, a push agent's attestations accepted and failures forgotten; 204 (admin)")
  )
  .add(HttpApiEndpoint.get("listImaPolicies", "/policies/ima").annotate(OpenApi.Summary, "Names of the stored IMA (runtime) policies as `ima_policy` resources (admin)"))
  .add(
    HttpApiEndpoint.post("createImaPolicy", "/policies/ima").setPayload(ImaPolicyDocument)
      .annotate(OpenApi.Summary, "Store an IMA policy: `data.id` is its name, the attributes the v2 allowlist body; 201 with the resource, its text left out (GET returns it) (admin)")
  )
  .add(HttpApiEndpoint.get("showImaPolicy", "/policies/ima/:name").setPath(NamePath).annotate(OpenApi.Summary, "An IMA policy: its text and tpm_policy (admin)"))
  .add(
    HttpApiEndpoint.patch("updateImaPolicy", "/policies/ima/:name").setPath(NamePath).setPayload(ImaPolicyDocument)
      .annotate(OpenApi.Summary, "Replace an IMA policy (the whole v2 body again); agents using it judge their next evidence with it; 200 with the resource, its text left out (admin)")
  )
  .add(HttpApiEndpoint.del("deleteImaPolicy", "/policies/ima/:name").setPath(NamePath).annotate(OpenApi.Summary, "Delete an IMA policy no agent uses: 204; 409 naming the agent (admin)"))
  .add(HttpApiEndpoint.get("listUefiRefstates", "/refstates/uefi").annotate(OpenApi.Summary, "Names of the stored UEFI (measured-boot) reference states as `uefi_refstate` resources (admin)"))
  .add(
    HttpApiEndpoint.post("createUefiRefstate", "/refstates/uefi").setPayload(UefiRefstateDocument)
      .annotate(OpenApi.Summary, "Store a UEFI reference state: `data.id` is its name, `mb_policy` the reference state JSON text; 201 (admin)")
  )
  .add(HttpApiEndpoint.get("showUefiRefstate", "/refstates/uefi/:name").setPath(NamePath).annotate(OpenApi.Summary, "A UEFI reference state (admin)"))
  .add(
    HttpApiEndpoint.patch("updateUefiRefstate", "/refstates/uefi/:name").setPath(NamePath).setPayload(UefiRefstateDocument)
      .annotate(OpenApi.Summary, "Replace a UEFI reference state (admin)")
  )
  .add(
    HttpApiEndpoint.del("deleteUefiRefstate", "/refstates/uefi/:name").setPath(NamePath)
      .annotate(OpenApi.Summary, "Delete a UEFI reference state no agent uses: 204; 409 naming the agent (admin)")
  )
  .prefix(V3_ROUTE_PREFIX)
  .middleware(V3Authorization)
{}

/** `GET /`: server information is a redirect to the newest API (Keylime's, push-model.md §2.5). */
export class ServerRootGroup extends HttpApiGroup.make("root")
  .add(HttpApiEndpoint.get("root", "/").annotate(OpenApi.Summary, "Redirect (307) to /v3.0/, where API 3.0 answers (public)"))
{}
