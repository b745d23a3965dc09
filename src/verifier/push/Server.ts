/**
 * The push model's layers: its domain (sessions, attestations, liveness, store) and its routes.
 *
 *   PushDomainLive: needs SqlClient (migrations applied), VerifierConfig, AgentRepo, the policy
 *   repositories and PolicyCache: what the verifier's own services already provide.
 *   PushServerLive(options): the v3 routes alone on an HTTPS listener (tests, benchmarks), with
 *   PushClientIdentity (admins by mTLS, agents by token) and the authorization provider.
 *
 * Mounting in the verifier: add `PushGroup` to VerifierApi, build the handlers against it
 * (push/Http.ts), provide PushDomainLive, serve with VERIFIER_VERSIONS, and use PushClientIdentity
 * as the verifier's ClientIdentity so agents may read their v2 status with their token.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { HttpServers } from "../../../layers/HttpServers.js"
import { AuthorizationProviderLive } from "../../http/authorization.js"
import { VERIFIER_VERSIONS } from "../../http/versions.js"
import { Attestations } from "./Attestations.js"
import { PushClientIdentity } from "./auth.js"
import { PushHttpLive } from "./Http.js"
import { Api } from "./HttpApi.js"
import { Liveness } from "./Liveness.js"
import { PushRepo } from "./repo.js"
import { Sessions } from "./Sessions.js"

export const PushDomainLive = Attestations.Default.pipe(
  Layer.provideMerge(Layer.mergeAll(Sessions.Default, Liveness.Default)),
  Layer.provideMerge(PushRepo.Default)
)

export interface PushServerOptions {
  readonly host: string
  readonly port: number
  readonly authorizationProvider?: string
}

export const PushServerLive = (o: PushServerOptions) =>
  HttpServers.layer({
    versions: VERIFIER_VERSIONS,
    unversioned: [],
    listeners: [{ name: "verifier", host: o.host, port: o.port, tls: true }]
  }).pipe(
    Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(PushHttpLive))),
    Layer.provide(PushClientIdentity),
    Layer.provide(AuthorizationProviderLive(o.authorizationProvider ?? "simple"))
  )
