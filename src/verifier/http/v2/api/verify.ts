/**
 * The stateless checks (spec §2.5, §4.1): `verify/identity` (does a quote come from an agent's
 * stored AK?) and `verify/evidence` (third-party evidence against the policies sent with it; 2.4
 * integer `valid`, 2.5+ boolean with `claims`). Both are public (spec §5.2).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import {
  EvidenceResults,
  VerifyEvidenceRequest,
  VerifyIdentityQuery,
  VerifyIdentityResult
} from "../../../../../schemas/Evidence.js"
import {
  BadRequestE,
  BadRequestWithResultsE,
  ConflictE,
  Envelope,
  ForbiddenE,
  InternalErrorE,
  NotFoundE,
  ServiceUnavailableE,
  UnauthorizedE
} from "../../../../../schemas/Envelope.js"
import { V2Authorization } from "../../authorization.js"

export class VerifierVerifyGroup extends HttpApiGroup.make("verify")
  .add(
    HttpApiEndpoint.get("identity", "/verify/identity")
      .setUrlParams(VerifyIdentityQuery)
      .addSuccess(Envelope(VerifyIdentityResult))
      .annotate(OpenApi.Summary, "Is `quote` over `nonce` signed by the stored AK of `agent_uuid`? `valid` 1, or 0 with the reason (public, API 2.2+)")
  )
  .add(
    HttpApiEndpoint.post("evidence", "/verify/evidence")
      .setPayload(VerifyEvidenceRequest)
      .addSuccess(Envelope(EvidenceResults))
      // an input error names its failures in `results` (Keylime's `default.missing_param` …)
      .addError(BadRequestWithResultsE)
      .annotate(
        OpenApi.Summary,
        "Verify evidence (`type` tpm or tee) against the policies in the request; input errors are 400 with `results.failures` (public, API 2.4+). With `Accept: application/eat+jwt` the verdict is an EAR (ES256 JWT, keys at GET /.well-known/ear-jwks.json)"
      )
  )
  .addError(BadRequestE)
  .addError(UnauthorizedE)
  .addError(ForbiddenE)
  .addError(ConflictE)
  .addError(NotFoundE)
  .addError(InternalErrorE)
  .addError(ServiceUnavailableE)
  .middleware(V2Authorization)
{}
