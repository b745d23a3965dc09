/**
 * Who calls a v3 route and whether they may (spec §5.2; push-model.md §5). With an `Authorization`
 * header the request is an agent attempt and nothing else: `Bearer <token>` (RFC 6750, the one
 * parser of every API version: src/http/identity.ts) of an active, unexpired session is that agent
 * in that session; anything else is refused 401 with Keylime's texts, or attest's saying why a
 * session ended (never a fallback to the client certificate). Without the header the mTLS client certificate decides admin or anonymous
 * (ClientIdentity). The AuthorizationProvider then decides by operation class; a denial is 403
 * with the texts of spec §7.3.
 *
 * `PushClientIdentity` is the verifier's ClientIdentity for the v2 routes as well: its bearer
 * check is the session store's, so an agent reads its own v2 status with its token.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Either, Layer, Option } from "effect"
import { adminCheck, ServerTls } from "../../../http/Tls.js"
import type { AuthorizationProviderShape, OperationClass } from "../../../http/authorization.js"
import { bearerToken, ClientIdentity, type ClientIdentityShape, type Identity, parseBearer } from "../../../http/identity.js"
import type { SessionEndReason } from "../../domain/pushStore/rows.js"
import type { TokenRefused } from "../../push/errors.js"
import { Sessions } from "../../push/Sessions.js"

/** Keylime's texts of a refused token. */
export const TokenText: Readonly<Record<Exclude<TokenRefused["reason"], "ended">, string>> = {
  format: "Invalid Authorization header format",
  unknown: "Invalid authentication token",
  inactive: "Authentication session not active",
  expired: "Authentication token expired"
}

/** attest's texts of a session that ended before its token expired. */
export const EndedText: Readonly<Record<SessionEndReason, string>> = {
  deleted: "Authentication session ended: the agent was deleted at the verifier",
  stopped: "Authentication session ended: the agent was stopped by an administrator",
  reactivated: "Authentication session ended: the agent was reactivated by an administrator; authenticate again",
  enrolled: "Authentication session ended: the agent was enrolled again; authenticate again",
  reconfigured: "Authentication session ended: an administrator changed whether the agent's attestations are accepted; authenticate again",
  replaced: "Authentication session ended: a newer session of the agent replaced it"
}

/** The 401 text of a refused token. */
export const tokenRefusalText = (e: Pick<TokenRefused, "reason" | "ended">): string =>
  e.reason === "ended" ? EndedText[e.ended ?? "replaced"] : TokenText[e.reason]

/** A refusal of the auth layer: 401 (token) or 403 (authorization). */
export interface AuthRefusal {
  readonly status: 401 | 403
  readonly detail: string
}

/** Who the caller is, or why it is refused. */
export type Identified = Either.Either<Identity, AuthRefusal>
const refused = (r: AuthRefusal): Identified => Either.left(r)
const identified = (i: Identity): Identified => Either.right(i)

/** What a v3 authorization stands on: the session store (agents' tokens), ClientIdentity (admins by mTLS), the provider. */
export interface V3Authorizer {
  readonly sessions: Sessions
  readonly identity: ClientIdentityShape
  readonly provider: AuthorizationProviderShape
}

/** The agent an `Authorization` header names, or the 401 it earns. */
export const identifyByAuthorization = (sessions: Sessions, header: string): Effect.Effect<Identified> => {
  const token = parseBearer(header)
  if (Option.isNone(token)) return Effect.succeed(refused({ status: 401, detail: TokenText.format }))
  return Effect.map(Effect.either(sessions.checkToken(token.value)), (checked) =>
    Either.isLeft(checked)
      ? refused({ status: 401, detail: tokenRefusalText(checked.left) })
      : identified({ _tag: "Agent", agentId: checked.right.agent_id, sessionId: checked.right.session_id }))
}

/** The caller of a v3 request, or the 401 its Authorization header earns. */
export const identifyV3 = (authorizer: V3Authorizer, request: HttpServerRequest.HttpServerRequest): Effect.Effect<Identified> => {
  const header = request.headers["authorization"]
  return header !== undefined
    ? identifyByAuthorization(authorizer.sessions, header)
    : Effect.map(authorizer.identity.identify(request), identified)
}

/** The AuthorizationProvider's decision for an identified caller: 403 with its text when denied. */
export const authorizeIdentified = (
  provider: AuthorizationProviderShape,
  caller: Identified,
  action: string,
  operationClass: OperationClass,
  resourceAgentId?: string
): Effect.Effect<Identified> => {
  if (Either.isLeft(caller)) return Effect.succeed(caller)
  return Effect.map(
    Effect.either(provider.authorize({
      action,
      operationClass,
      identity: caller.right,
      ...(resourceAgentId === undefined ? {} : { resourceAgentId })
    })),
    (decided) => Either.isLeft(decided) ? refused({ status: 403, detail: decided.left.message }) : caller
  )
}

/** ClientIdentity of the verifier: admins by mTLS (ServerTls), agents by their session token. */
export const PushClientIdentity: Layer.Layer<ClientIdentity, never, ServerTls | Sessions> = Layer.effect(
  ClientIdentity,
  Effect.gen(function*() {
    const tls = yield* ServerTls
    const sessions = yield* Sessions
    return ClientIdentity.make({
      isAdmin: adminCheck(tls.trustedClientCas, tls.revocations),
      verifyBearer: (token) =>
        sessions.checkToken(token).pipe(
          Effect.map((s) => Option.some(s.agent_id)),
          Effect.catchTag("TokenRefused", () => Effect.succeed(Option.none<string>()))
        )
    })
  })
)

export { bearerToken }
