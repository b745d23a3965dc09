/**
 * V3Authorization's layer (http/authorization.ts), and the same decision for the push front app
 * (push/directRoutes.ts). With an `Authorization` header the caller is an agent in the session of
 * its token and nothing else (spec §5.2: no fallback to the client certificate; 401 with Keylime's
 * texts when refused); without it the mTLS client certificate decides admin or anonymous. The
 * provider then decides by the route's operation (http/operations.ts); a denial is 403 with the
 * texts of spec §7.3. Public operations are put to the provider without identifying the caller
 * (the session routes read an agent's token themselves).
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Either, Layer } from "effect"
import { AuthorizationProvider, authorizePublic } from "../../../http/authorization.js"
import { ClientIdentity, type Identity } from "../../../http/identity.js"
import { jsonApiRefused } from "../../../http/jsonapi.js"
import type { RouteOperation } from "../../../http/operations.js"
import { authorizeIdentified, type Identified, identifyV3, type V3Authorizer } from "./auth.js"
import { Sessions } from "../../push/Sessions.js"
import { V3Authorization } from "../authorization.js"
import { verifierOperations } from "../operations.js"

const ANONYMOUS: Identity = { _tag: "Anonymous", reason: "public operation: caller not identified" }

/** The caller of `request` if `operation` is allowed to it, else the refusal (401 or 403) to answer. */
export const authorizeV3Request = (authorizer: V3Authorizer, request: HttpServerRequest.HttpServerRequest, operation: RouteOperation) =>
  operation.operationClass === "public"
    ? Effect.map(Effect.either(authorizePublic(authorizer.provider, operation.action)), (decided): Identified =>
      Either.isLeft(decided) ? Either.left({ status: 403, detail: decided.left.message }) : Either.right(ANONYMOUS))
    : Effect.flatMap(identifyV3(authorizer, request), (caller) =>
      authorizeIdentified(authorizer.provider, caller, operation.action, operation.operationClass, operation.resourceAgentId))

/** The services of a V3Authorizer, from context. */
export const v3Authorizer = Effect.all({ sessions: Sessions, identity: ClientIdentity, provider: AuthorizationProvider })

export const V3AuthorizationLive = Layer.effect(
  V3Authorization,
  Effect.map(v3Authorizer, (authorizer) =>
    Effect.gen(function*() {
      const operation = yield* verifierOperations.current
      const request = yield* HttpServerRequest.HttpServerRequest
      const decided = yield* authorizeV3Request(authorizer, request, operation)
      if (Either.isLeft(decided)) return yield* Effect.flip(jsonApiRefused(decided.left.status, decided.left.detail))
      return decided.right
    }))
)
