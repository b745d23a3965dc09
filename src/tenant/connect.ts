/**
 * The tenant's connections: one mTLS HttpClient for the verifier and registrar (the admin client
 * certificate, trusting `trusted_server_ca`) and one per agent (the same certificate, trusting
 * exactly the agent's registered `mtls_cert`). Each server's API version is negotiated once, on
 * first use, from its `GET /version` (spec §9.3; a verifier in push mode that answers 410 Gone, as
 * Keylime's does, is spoken to in the tenant's current version, as Keylime's tenant does), and
 * typed `HttpApiClient`s are made from the servers' own `Api.ts` at `<url>/v<version>`.
 */
import { HttpApi, HttpApiClient, HttpApiEndpoint, HttpApiGroup, type HttpClient } from "@effect/platform"
import { Duration, Effect, Option, Schema, type Scope } from "effect"
import { AgentApi } from "../agent/Api.js"
import { makeHttpsClient } from "../http/client.js"
import { RegistrarApi } from "../registrar/Api.js"
import { VerifierApi } from "../verifier/http/Api.js"
import { BadRequestE, Envelope, ForbiddenE, InternalErrorE, NotFoundE, ServiceUnavailableE } from "../../schemas/Envelope.js"
import { VersionInfo } from "../../schemas/Registrar.js"
import { TenantError } from "./errors.js"
import { remote, type Service } from "./remote.js"
import type { TenantSettings } from "./settings.js"
import { negotiate, offered, TENANT_CURRENT_VERSION, TENANT_VERSIONS } from "./versions.js"

/** `GET /version` of the verifier and registrar (unversioned, public). */
class ServerVersionApi extends HttpApi.make("server-version")
  .add(HttpApiGroup.make("version").add(HttpApiEndpoint.get("get", "/version").addSuccess(Envelope(VersionInfo))))
  .addError(BadRequestE)
  .addError(ForbiddenE)
  .addError(NotFoundE)
  .addError(InternalErrorE)
  .addError(ServiceUnavailableE)
{}

/**
 * An agent's `GET /version` as the tenant reads it: `supported_versions` only from API 2.5 agents
 * (spec §4.3, §9.3); older ones answer `supported_version` alone.
 */
class AgentVersionReadApi extends HttpApi.make("agent-version-read")
  .add(HttpApiGroup.make("version").add(
    HttpApiEndpoint.get("get", "/version").addSuccess(Envelope(Schema.Struct({
      supported_version: Schema.String,
      supported_versions: Schema.optional(Schema.Array(Schema.String))
    })))
  ))
  .addError(BadRequestE)
  .addError(NotFoundE)
  .addError(InternalErrorE)
{}

export interface Negotiated {
  readonly url: string
  readonly version: string
  /** What the server said it speaks. */
  readonly offered: ReadonlyArray<string>
}

const noCommon = (service: Service, url: string, theirs: ReadonlyArray<string>) =>
  new TenantError({
    service,
    message: `the ${service} at ${url} speaks API ${theirs.join(", ") || "(none listed)"}; this tenant speaks ${TENANT_VERSIONS.join(", ")}: no version in common`
  })

export interface Connections {
  readonly settings: TenantSettings
  readonly timeout: Duration.Duration
  /** A call to a server with its failures as one sentence (remote.ts). */
  readonly call: <A, E, R>(service: Service, url: string, what: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, TenantError, R>
  readonly serverClient: HttpClient.HttpClient
  readonly registrar: Effect.Effect<Negotiated & { readonly api: RegistrarClient }, TenantError>
  /** The verifier's typed client at the negotiated version. */
  readonly verifier: Effect.Effect<Negotiated & { readonly api: VerifierClient }, TenantError>
  /** An agent's typed client at its negotiated version; its `mtls_cert` is trusted (pinned), nothing else. */
  readonly agent: (
    a: { readonly agentId: string; readonly ip: string; readonly port: number; readonly mtlsCert: string | null }
  ) => Effect.Effect<Negotiated & { readonly api: AgentClient }, TenantError, Scope.Scope>
}

export type RegistrarClient = Effect.Effect.Success<ReturnType<typeof makeRegistrarClient>>
const makeRegistrarClient = (httpClient: HttpClient.HttpClient, baseUrl: string) => HttpApiClient.makeWith(RegistrarApi, { httpClient, baseUrl })

export type VerifierClient = Effect.Effect.Success<ReturnType<typeof makeVerifierClient>>
const makeVerifierClient = (httpClient: HttpClient.HttpClient, baseUrl: string) => HttpApiClient.makeWith(VerifierApi, { httpClient, baseUrl })

export type AgentClient = Effect.Effect.Success<ReturnType<typeof makeAgentClient>>
const makeAgentClient = (httpClient: HttpClient.HttpClient, baseUrl: string) => HttpApiClient.makeWith(AgentApi, { httpClient, baseUrl })

/** Builds the connections for one command (closed with its scope). */
export const connect = (settings: TenantSettings) =>
  Effect.gen(function*() {
    const timeout = Duration.seconds(settings.options.request_timeout)
    const serverClient = yield* makeHttpsClient(settings.tls)
    const call = <A, E, R>(service: Service, url: string, what: string, effect: Effect.Effect<A, E, R>) =>
      remote({
        service,
        url,
        what,
        timeout,
        retries: settings.options.max_retries,
        retryInterval: Duration.seconds(settings.options.retry_interval)
      }, effect)

    const serverVersion = (service: "registrar" | "verifier", url: string) =>
      Effect.gen(function*() {
        const root = yield* HttpApiClient.makeWith(ServerVersionApi, { httpClient: serverClient, baseUrl: url })
        const answer = yield* call(service, url, `GET ${url}/version`, root.version.get()).pipe(
          Effect.map(Option.some),
          // a Keylime verifier in push mode answers 410 Gone: its tenant then speaks its own current version
          Effect.catchIf((e) => e.status === 410, () => Effect.succeed(Option.none()))
        )
        if (Option.isNone(answer)) return { url, version: TENANT_CURRENT_VERSION, offered: [TENANT_CURRENT_VERSION] } satisfies Negotiated
        const info = answer.value
        const theirs = offered({ supported_versions: info.supported_versions, current: info.current_version })
        const version = negotiate(TENANT_VERSIONS, theirs)
        if (version === undefined) return yield* noCommon(service, url, theirs)
        return { url, version, offered: theirs } satisfies Negotiated
      })

    const registrar = yield* Effect.cached(
      Effect.gen(function*() {
        const n = yield* serverVersion("registrar", settings.registrarUrl)
        const api = yield* makeRegistrarClient(serverClient, `${n.url}/v${n.version}`)
        return { ...n, api }
      })
    )
    const verifier = yield* Effect.cached(
      Effect.gen(function*() {
        const n = yield* serverVersion("verifier", settings.verifierUrl)
        const api = yield* makeVerifierClient(serverClient, `${n.url}/v${n.version}`)
        return { ...n, api }
      })
    )

    const agent: Connections["agent"] = (a) =>
      Effect.gen(function*() {
        if (a.mtlsCert === null || a.mtlsCert === "disabled" || a.mtlsCert === "") {
          return yield* new TenantError({
            service: "agent",
            message: `agent ${a.agentId} registered without an mTLS certificate (mtls_cert ${a.mtlsCert === null ? "null" : `"${a.mtlsCert}"`}); the tenant reaches agents over mTLS only`
          })
        }
        const url = `https://${a.ip.includes(":") ? `[${a.ip}]` : a.ip}:${a.port}`
        const httpClient = yield* makeHttpsClient({ ...settings.tls, ca: a.mtlsCert, checkServerIdentity: false })
        const root = yield* HttpApiClient.makeWith(AgentVersionReadApi, { httpClient, baseUrl: url })
        // agents before API 2.5 may not serve /version (spec §4.3): they are spoken to in 2.0 … their
        // only version, which their 400 on a wrong one would name; 2.1 is the oldest with every field used here
        const info = yield* call("agent", url, `GET ${url}/version`, root.version.get()).pipe(
          Effect.map((v) => offered({ supported_versions: v.supported_versions, current: v.supported_version })),
          Effect.catchIf((e) => e.status === 404 || e.status === 400, () => Effect.succeed(["2.1"] as ReadonlyArray<string>))
        )
        const version = negotiate(TENANT_VERSIONS, info)
        if (version === undefined) return yield* noCommon("agent", url, info)
        const api = yield* makeAgentClient(httpClient, `${url}/v${version}`)
        return { url, version, offered: info, api }
      })

    return { settings, timeout, call, serverClient, registrar, verifier, agent } satisfies Connections
  })
