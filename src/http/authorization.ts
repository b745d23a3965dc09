/**
 * Authorization (spec §5.2, §7.3): a provider decides per operation class whether an identity may
 * perform an action. `simple` is the default provider; others can be added as further layers of the
 * `AuthorizationProvider` tag and chosen with the `authorization_provider` option.
 */
import { HttpServerRequest } from "@effect/platform"
import { Context, Effect, FiberRef, Layer } from "effect"
import { BadRequest, Forbidden } from "../../schemas/Envelope.js"
import { ClientIdentity, type ClientIdentityShape, currentListener, type Identity } from "./identity.js"

export type OperationClass = "public" | "agent" | "agentOrAdmin" | "admin"

export interface AuthorizationRequest {
  /** Keylime-style action name for logs, e.g. `list_registrations`. */
  readonly action: string
  readonly operationClass: OperationClass
  /** The agent the resource belongs to, for agent-owned resources. */
  readonly resourceAgentId?: string
  readonly identity: Identity
}

/** Exact texts of spec §7.3. */
export const AuthorizationText = {
  adminRequired: "Action requires admin authentication (mTLS certificate)",
  agentRequired: "Action requires agent authentication (PoP token)",
  ownershipRequired: "Agent cannot access resource (ownership required)"
} as const

export interface AuthorizationProviderShape {
  readonly name: string
  readonly authorize: (request: AuthorizationRequest) => Effect.Effect<void, Forbidden>
}

export class AuthorizationProvider extends Context.Tag("attest/http/AuthorizationProvider")<
  AuthorizationProvider,
  AuthorizationProviderShape
>() {}

const deny = (message: string) => Effect.fail(new Forbidden({ message }))

/** Pure decision of the `simple` provider: undefined = allowed, else the denial text. */
export const simpleDecision = (request: AuthorizationRequest): string | undefined => {
  const { identity } = request
  switch (request.operationClass) {
    case "public":
      return undefined
    case "admin":
      return identity._tag === "Admin" ? undefined : AuthorizationText.adminRequired
    case "agent":
      if (identity._tag !== "Agent") return AuthorizationText.agentRequired
      return identity.agentId === request.resourceAgentId ? undefined : AuthorizationText.ownershipRequired
    case "agentOrAdmin":
      if (identity._tag === "Admin") return undefined
      if (identity._tag === "Agent") {
        return identity.agentId === request.resourceAgentId ? undefined : AuthorizationText.ownershipRequired
      }
      return AuthorizationText.adminRequired
  }
}

/** Who asks, for the decision's log line. */
const whoOf = (identity: Identity): string =>
  identity._tag === "Admin"
    ? `identity=${identity.name}, identity_type=admin`
    : identity._tag === "Agent"
    ? `identity=${identity.agentId}, identity_type=agent`
    : `identity_type=anonymous (${identity.reason})`

export const simpleProvider: AuthorizationProviderShape = {
  name: "simple",
  // a plain function, not Effect.fn: it runs on every request, and Effect.fn's span costs ~40x the decision
  authorize: (request: AuthorizationRequest) => {
    const denial = simpleDecision(request)
    if (denial === undefined) {
      return request.operationClass === "public" ? Effect.void : Effect.logDebug(`Authorization GRANTED: ${whoOf(request.identity)}, action=${request.action}`)
    }
    return Effect.zipRight(Effect.logInfo(`Authorization DENIED: ${whoOf(request.identity)}, action=${request.action}`), deny(denial))
  }
}

/** Providers by their `authorization_provider` name. */
export const authorizationProviders: Readonly<Record<string, AuthorizationProviderShape>> = { simple: simpleProvider }

export const AuthorizationProviderLive = (name: string): Layer.Layer<AuthorizationProvider, Error> => {
  const provider = authorizationProviders[name]
  return provider === undefined
    ? Layer.fail(
      new Error(
        `authorization_provider: unknown provider '${name}' (known: ${Object.keys(authorizationProviders).join(", ")})`
      )
    )
    : Layer.succeed(AuthorizationProvider, provider)
}

export interface OperationOptions {
  /** Only served on the TLS listener: a plain-HTTP call gets 400 like Keylime's registrar. */
  readonly tlsOnly?: boolean
}

/** The services an authorization decision stands on (a middleware takes them when it is built). */
export interface Authorizer {
  readonly identity: ClientIdentityShape
  readonly provider: AuthorizationProviderShape
}

/**
 * Identifies the caller and asks the provider. Admin operations reached over the plain listener
 * fail with 400 (Keylime answers 400 there too) and a text saying where they are served.
 */
export const authorizeWith = (
  authorizer: Authorizer,
  request: HttpServerRequest.HttpServerRequest,
  action: string,
  operationClass: OperationClass,
  resourceAgentId?: string,
  options: OperationOptions = {}
): Effect.Effect<Identity, Forbidden | BadRequest> =>
  Effect.gen(function*() {
    const listener = yield* FiberRef.get(currentListener)
    if ((options.tlsOnly === true || operationClass === "admin") && !listener.tls) {
      return yield* new BadRequest({
        message: `Action ${action} is only served on the HTTPS (mTLS) port, not on the plain HTTP port`
      })
    }
    const identity = yield* authorizer.identity.identify(request)
    yield* authorizer.provider.authorize({
      action,
      operationClass,
      identity,
      ...(resourceAgentId === undefined ? {} : { resourceAgentId })
    })
    return identity
  })

/**
 * Public operations are put to the provider without identifying the caller: the simple provider
 * allows them to anyone, and identifying means parsing and chain-checking the client certificate, a
 * fifth of the CPU of a verify/evidence request (bench/verify-evidence.ts).
 */
export const authorizePublic = (provider: AuthorizationProviderShape, action: string) =>
  provider.authorize({ action, operationClass: "public", identity: { _tag: "Anonymous", reason: "public operation: caller not identified" } })

/** The check a handler runs first: authorizeWith the ClientIdentity and provider in context. */
export const authorize = (
  action: string,
  operationClass: OperationClass,
  resourceAgentId?: string,
  options: OperationOptions = {}
): Effect.Effect<Identity, Forbidden | BadRequest, ClientIdentity | AuthorizationProvider | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const authorizer = { identity: yield* ClientIdentity, provider: yield* AuthorizationProvider }
    return yield* authorizeWith(authorizer, request, action, operationClass, resourceAgentId, options)
  })
