/**
 * V2Authorization's layer (http/authorization.ts): the matched route's operation (http/operations.ts)
 * put to the AuthorizationProvider, the caller identified by ClientIdentity (admins by mTLS, an
 * agent by its token) unless the operation is public; a denial is the v2 envelope's 403 naming the
 * action as Keylime's does (httpErrors.ts forbiddenText).
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Forbidden } from "../../../../schemas/Envelope.js"
import { AuthorizationProvider, authorizePublic, authorizeWith } from "../../../http/authorization.js"
import { ClientIdentity } from "../../../http/identity.js"
import { forbiddenText } from "./httpErrors.js"
import { V2Authorization } from "../authorization.js"
import { verifierOperations } from "../operations.js"

export const V2AuthorizationLive = Layer.effect(
  V2Authorization,
  Effect.gen(function*() {
    const authorizer = { identity: yield* ClientIdentity, provider: yield* AuthorizationProvider }
    return Effect.gen(function*() {
      const operation = yield* verifierOperations.current
      if (operation.operationClass === "public") return yield* authorizePublic(authorizer.provider, operation.action)
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* authorizeWith(authorizer, request, operation.action, operation.operationClass, operation.resourceAgentId).pipe(
        Effect.catchTag("Forbidden", (e) => Effect.fail(new Forbidden({ message: forbiddenText(operation.action, e.message) })))
      )
    })
  })
)
