/**
 * The running verifier's API: one HTTPS listener (Keylime `port`, 8881; there is no plain-HTTP
 * port), the domain services, the authorization provider, and `GET /openapi.json` (public,
 * unversioned). Needs, from outside: `ServerTls` and `ClientIdentity` (src/http/Tls.ts), `SqlClient`
 * with migrations applied (src/db/Sql.ts), `VerifierConfig` and the pull loop's `PollerControl`
 * (`PollerControl.none` when this process polls nothing); fromConfig.ts composes them from the
 * `[verifier]` section.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { HttpServers } from "../http/HttpServers.js"
import { AuthorizationProviderLive } from "../http/authorization.js"
import { DEFAULT_MAX_BODY_BYTES } from "../http/platform.js"
import { routesOf, serveMethodNotAllowed } from "../http/routes.js"
import { V2_VERSIONS, VERIFIER_VERSIONS, versionInfo } from "../http/versions.js"
import { verifierDocument } from "./http/openapi.js"
import { serveOpenApi } from "../http/openapi.js"
import { AgentAdmin } from "./domain/AgentAdmin.js"
import { Agents } from "./domain/Agents.js"
import { VERIFIER_UNVERSIONED, VerifierApi } from "./http/Api.js"
import {
  VerifierAgentsHttpLive,
  VerifierAllowlistsHttpLive,
  VerifierMbPoliciesHttpLive,
  VerifierVerifyHttpLive,
  VerifierVersionHttpLive
} from "./http/v2/Http.js"
import { Policies } from "./domain/policy/Policies.js"
import { PolicyCache } from "./domain/policy/PolicyCache.js"
import { PushClientIdentity } from "./http/v3/auth.js"
import { ServerRootHttpLive, V3AdminHttpLive } from "./http/v3/AdminHttp.js"
import { PushDirectRoutes } from "./http/v3/directRoutes.js"
import { Liveness } from "./push/Liveness.js"
import { PushHttpLive } from "./http/v3/PushHttp.js"
import { PushDomainLive } from "./push/PushDomain.js"
import { AgentRepo } from "./domain/repo/AgentRepo.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "./domain/repo/PolicyRepo.js"
import { serveEarJwks } from "./domain/earIssuer.js"
import { V2AuthorizationLive } from "./http/v2/authorization.js"
import { V3AuthorizationLive } from "./http/v3/authorization.js"
import { StatelessChecks } from "./stateless/Stateless.js"

export interface VerifierServerOptions {
  readonly host: string
  /** HTTPS port (Keylime `port`, 8881); 0 = any free port. */
  readonly port: number
  readonly authorizationProvider?: string
  /** Largest request body (`max_upload_size`: runtime policies are large). */
  readonly maxBodyBytes?: number
}

/** The listener's name in BoundListeners. */
export const VERIFIER_LISTENER = "verifier"

/** Agents (AgentAdmin: what API 3.0 adds), Policies and the stateless checks over the database, config and PollerControl in context. */
export const VerifierDomainLive = Layer.mergeAll(Agents.Default, AgentAdmin.Default, Policies.Default, StatelessChecks.Default)

/**
 * The push model's domain (sessions, attestations, deadlines) with the repositories and policy
 * cache it stands on (AgentRepo given to the handlers too), and the verifier's ClientIdentity: admins
 * by mTLS, agents by their token.
 */
export const PushLayers = Layer.provideMerge(
  PushClientIdentity,
  // AgentRepo also for the handlers: a pull agent's latest EAR is signed from its stored verdict
  PushDomainLive.pipe(Layer.provide(Layer.mergeAll(RuntimePolicyRepo.Default, MbPolicyRepo.Default, PolicyCache.Default)), Layer.provideMerge(AgentRepo.Default))
)

export const VerifierServerLive = (options: VerifierServerOptions) => {
  const api = HttpApiBuilder.api(VerifierApi).pipe(
    Layer.provide([
      VerifierVersionHttpLive(V2_VERSIONS),
      VerifierAgentsHttpLive,
      VerifierAllowlistsHttpLive,
      VerifierMbPoliciesHttpLive,
      VerifierVerifyHttpLive,
      PushHttpLive,
      V3AdminHttpLive,
      ServerRootHttpLive
    ]),
    // the authorization middlewares of the groups (http/authorization.ts)
    Layer.provide([V2AuthorizationLive, V3AuthorizationLive]),
    Layer.provide(VerifierDomainLive),
    Layer.provide(AuthorizationProviderLive(options.authorizationProvider ?? "simple"))
  )
  return HttpServers.layer({
    versions: VERIFIER_VERSIONS,
    unversioned: VERIFIER_UNVERSIONED,
    // verify/evidence reads its own body: once admitted to the stateless workers, within
    // verify_evidence_max_body_size (Http.ts)
    ownBody: (method, path) => method === "POST" && path === "/verify/evidence",
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    listeners: [{ name: VERIFIER_LISTENER, host: options.host, port: options.port, tls: true }],
    // the version group's answers, without the router (http/fixedRoutes.ts)
    fixedRoutes: [
      { path: "/version", action: "get_version", results: versionInfo(V2_VERSIONS) },
      { path: "/versions", action: "get_version", results: versionInfo(V2_VERSIONS) }
    ]
  }).pipe(
    Layer.provide(api),
    Layer.provide(AuthorizationProviderLive(options.authorizationProvider ?? "simple")),
    Layer.provide(serveOpenApi(verifierDocument)),
    Layer.provide(serveEarJwks),
    // v2 routes only: the push model's /v3 routes answer in JSON:API
    Layer.provide(serveMethodNotAllowed(routesOf(VerifierApi).filter((r) => !r.path.startsWith("/v3")))),
    // a push attestation's two requests, answered without the router (http/v3/directRoutes.ts)
    Layer.provide(
      PushDirectRoutes({ maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES }).pipe(Layer.provide(AuthorizationProviderLive(options.authorizationProvider ?? "simple")))
    ),
    // the listener is bound: push deadlines give every agent one full deadline from now (a restart
    // is not a failure of the agents: push/Liveness.ts)
    Layer.tap(() => Effect.flatMap(Liveness, (liveness) => liveness.listening)),
    // one process serves both families: API 2.x (envelope) and 3.0 (JSON:API, push agents). Given
    // here, outermost: the handlers see the ClientIdentity of the server's context (admins by mTLS,
    // agents by their token), which replaces any given from outside
    Layer.provide(PushLayers)
  )
}
