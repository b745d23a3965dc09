/**
 * The verifier's authorization middlewares (spec §5.2), one per API family, set on every group
 * whose routes the provider decides (api/*.ts, push/Api.ts, push/AdminApi.ts): each finds the
 * matched route's operation (http/operations.ts), identifies the caller where the operation needs
 * it and asks the AuthorizationProvider, before the request is decoded or handled.
 *
 *   - V2Authorization: refusals in the v2 envelope (403 naming the action as Keylime does).
 *   - V3Authorization: refusals as JSON:API errors `{status, title, detail}` (401 for an agent's
 *     token that is refused, 403 for the provider's denial); provides the caller (an agent's
 *     session is read from it by the attestation routes).
 *
 * The layers are v2/authorization.ts and v3/authorization.ts.
 */
import { HttpApiMiddleware } from "@effect/platform"
import { Context, Schema } from "effect"
import { BadRequestE, ForbiddenE } from "../../../schemas/Envelope.js"
import type { Identity } from "../../http/identity.js"
import { JsonApiRefusedWithStatus } from "../../http/jsonapi.js"

export class V2Authorization extends HttpApiMiddleware.Tag<V2Authorization>()("attest/verifier/V2Authorization", {
  // BadRequest: an admin operation reached over a plain-HTTP listener
  failure: Schema.Union(ForbiddenE, BadRequestE)
}) {}

/** Who called a v3 route (an agent in its session, an admin, or anonymous for a public one). */
export class Caller extends Context.Tag("attest/verifier/Caller")<Caller, Identity>() {}

export class V3Authorization extends HttpApiMiddleware.Tag<V3Authorization>()("attest/verifier/V3Authorization", {
  failure: Schema.Union(JsonApiRefusedWithStatus(401), JsonApiRefusedWithStatus(403)),
  provides: Caller
}) {}
