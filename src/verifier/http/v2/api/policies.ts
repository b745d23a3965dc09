/**
 * Named runtime (IMA) policies, `allowlists` (spec §2.4, §4.1), and measured-boot policies,
 * `mbpolicies` (from API 2.3). Bodies are declared with their Schemas for clients; the server reads
 * them raw (Policies.ts) so a refusal names the field in Keylime's words.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequestE,
  ConflictE,
  Empty,
  Envelope,
  ForbiddenE,
  InternalErrorE,
  NotFoundE,
  ServiceUnavailableE,
  UnauthorizedE
} from "../../../../../schemas/Envelope.js"
import {
  MbPolicyNames,
  MbPolicyRequest,
  MbPolicyResponse,
  RuntimePolicyNames,
  RuntimePolicyRequest,
  RuntimePolicyResponse
} from "../../../../../schemas/Verifier.js"
import { V2Authorization } from "../../authorization.js"

/** Any text: the handler checks the name. */
export const PolicyPath = Schema.Struct({ name: Schema.String })

export class VerifierAllowlistsGroup extends HttpApiGroup.make("allowlists")
  .add(
    HttpApiEndpoint.get("list", "/allowlists")
      .addSuccess(Envelope(RuntimePolicyNames))
      .annotate(OpenApi.Summary, "Names of the stored runtime policies, in creation order (admin)")
  )
  .add(
    HttpApiEndpoint.get("show", "/allowlists/:name")
      .setPath(PolicyPath)
      .addSuccess(Envelope(RuntimePolicyResponse))
      .annotate(OpenApi.Summary, "A runtime policy: its JSON text and tpm_policy (`tmp_policy`, Keylime's spelling) (admin)")
  )
  .add(
    HttpApiEndpoint.post("add", "/allowlists/:name")
      .setPath(PolicyPath)
      .setPayload(RuntimePolicyRequest)
      .addSuccess(Envelope(Empty, 201, "Created"))
      .annotate(OpenApi.Summary, "Store a runtime policy (base64 JSON; DSSE or detached signature checked with runtime_policy_key) (admin)")
  )
  .add(
    HttpApiEndpoint.put("update", "/allowlists/:name")
      .setPath(PolicyPath)
      .setPayload(RuntimePolicyRequest)
      .addSuccess(Envelope(Empty, 201, "Created"))
      .annotate(OpenApi.Summary, "Replace a stored runtime policy; agents using it judge their next quote with it (admin)")
  )
  .add(
    HttpApiEndpoint.del("remove", "/allowlists/:name")
      .setPath(PolicyPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Delete a runtime policy no agent uses (204, empty body; 409 naming the agent that uses it) (admin)")
  )
  .add(
    HttpApiEndpoint.del("removeSingular", "/allowlist/:name")
      .setPath(PolicyPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "The same delete on the singular path the spec documents (admin)")
  )
  .addError(BadRequestE)
  .addError(UnauthorizedE)
  .addError(ForbiddenE)
  .addError(NotFoundE)
  .addError(ConflictE)
  .addError(InternalErrorE)
  .addError(ServiceUnavailableE)
  .middleware(V2Authorization)
{}

export class VerifierMbPoliciesGroup extends HttpApiGroup.make("mbpolicies")
  .add(
    HttpApiEndpoint.get("list", "/mbpolicies")
      .addSuccess(Envelope(MbPolicyNames))
      .annotate(OpenApi.Summary, "Names of the stored measured-boot policies (API 2.3+) (admin)")
  )
  .add(
    HttpApiEndpoint.get("show", "/mbpolicies/:name")
      .setPath(PolicyPath)
      .addSuccess(Envelope(MbPolicyResponse))
      .annotate(OpenApi.Summary, "A measured-boot policy (reference state JSON text, or null) (admin)")
  )
  .add(
    HttpApiEndpoint.post("add", "/mbpolicies/:name")
      .setPath(PolicyPath)
      .setPayload(MbPolicyRequest)
      .addSuccess(Envelope(Empty, 201, "Created"))
      .annotate(OpenApi.Summary, "Store a measured-boot policy (the reference state as a JSON string) (admin)")
  )
  .add(
    HttpApiEndpoint.put("update", "/mbpolicies/:name")
      .setPath(PolicyPath)
      .setPayload(MbPolicyRequest)
      .addSuccess(Envelope(Empty, 201, "Created"))
      .annotate(OpenApi.Summary, "Replace a stored measured-boot policy (an unknown name is 409, as Keylime) (admin)")
  )
  .add(
    HttpApiEndpoint.del("remove", "/mbpolicies/:name")
      .setPath(PolicyPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Delete a measured-boot policy no agent uses (204) (admin)")
  )
  .addError(BadRequestE)
  .addError(UnauthorizedE)
  .addError(ForbiddenE)
  .addError(NotFoundE)
  .addError(ConflictE)
  .addError(InternalErrorE)
  .addError(ServiceUnavailableE)
  .middleware(V2Authorization)
{}
