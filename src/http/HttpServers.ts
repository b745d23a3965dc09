/**
 * Listeners of attest's servers: node HTTP/HTTPS servers with the one TLS policy
 * (src/http/tlsPolicy.ts), the clientError envelope hook, bounded TLS handshake, headers, request
 * and keep-alive (src/http/timeouts.ts: ListenerTimeouts in context, or its defaults), and a ListenError
 * naming the address when a port cannot be bound; and the HttpApi in context served on each of
 * them behind the request platform (src/http/platform.ts: body and JSON-depth limits, versions,
 * envelope, Retry-After); constant public answers (`fixedRoutes`: GET /version) in front of it all
 * (src/http/fixedRoutes.ts).
 *
 *   - `HttpServers.layer(options)`: listeners with `tls: true` use the ServerTls in context
 *     (src/http/Tls.ts) and ask clients for a certificate from its trusted CAs; the others are plain
 *     HTTP. This is what the registrar and the verifier use.
 *   - `HttpServers.layerWith(options)`: TLS files given per listener (no ServerTls), for tests.
 *   - `nodeServer(options)`: one configured node server, for a server with its own dispatcher
 *     (the agent), bound with src/http/listen.ts `serveNode`.
 *
 * The registrar (two listeners) is:
 *
 *   HttpServers.layer({
 *     versions: V2_VERSIONS,
 *     unversioned: ["/version"],
 *     maxBodyBytes: c.max_body_size,
 *     listeners: [
 *       { name: "registrar-http", host: c.ip, port: c.port, tls: false },
 *       { name: "registrar-https", host: c.ip, port: c.tls_port, tls: true }
 *     ]
 *   }).pipe(Layer.provide(api), Layer.provide(ServerTlsWithAdmins("registrar", c)))
 *
 * and BoundListeners says where each one listens (port 0 picks a free port).
 */
import { HttpApiBuilder, type HttpApp, HttpMiddleware, type HttpServerRequest } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Option } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { AuthorizationProvider } from "./authorization.js"
import { answerClientErrors } from "./clientError.js"
import { envelopeUndeclared } from "./envelope.js"
import { answerFixedRoutesFirst, type FixedRoute } from "./fixedRoutes.js"
import { fixPeerCertificate, type Listener } from "./identity.js"
import { formatAddress, serveNode } from "./listen.js"
import { DEFAULT_MAX_BODY_BYTES, type PlatformOptions, platformMiddleware, withListenerRefs } from "./platform.js"
import { labelRoutes } from "./requestMetrics.js"
import {
  DEFAULT_LISTENER_TIMEOUTS,
  ListenerTimeouts,
  type ListenerTimeoutsShape,
  nodeServerTimeouts,
  nodeTlsServerTimeouts
} from "./timeouts.js"
import { serverTlsPolicy } from "./tlsPolicy.js"
import { ServerTls } from "./Tls.js"

export interface TlsFiles {
  /** PEM texts, not paths: the caller reads files (or generates them) once at start-up. */
  readonly key: string
  readonly cert: string
  /** Trust anchors for client certificates; without it no client certificate is requested. */
  readonly clientCa?: string
  /**
   * Refuse the handshake without a certificate from `clientCa` (the agent, as rust-keylime).
   * Default false: the handshake succeeds and each operation's authorization decides.
   */
  readonly requireClientCertificate?: boolean
}

export interface NodeServerOptions {
  readonly tls?: TlsFiles
  /** TLS handshake, headers, whole request and keep-alive bounds (default DEFAULT_LISTENER_TIMEOUTS). */
  readonly timeouts?: ListenerTimeoutsShape
  /** Idle keep-alive connections are closed after this long (default: the timeouts' keepAliveMs). */
  readonly keepAliveTimeoutMs?: number
}

/**
 * A node HTTP or HTTPS server with the TLS policy, the clientError envelope hook and the bounds of
 * src/http/timeouts.ts: a client that has not finished its TLS handshake or sent its headers in
 * time, or its whole request, is closed, and so is an idle keep-alive connection. TLS
 * renegotiation is refused, so a connection keeps the client certificate of its handshake.
 */
export const nodeServer = (options: NodeServerOptions = {}): http.Server => {
  const base = options.timeouts ?? DEFAULT_LISTENER_TIMEOUTS
  const timeouts = options.keepAliveTimeoutMs === undefined ? base : { ...base, keepAliveMs: options.keepAliveTimeoutMs }
  const tls = options.tls
  const server = tls === undefined
    ? http.createServer(nodeServerTimeouts(timeouts))
    : https.createServer({
      key: tls.key,
      cert: tls.cert,
      ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa }),
      requestCert: tls.clientCa !== undefined,
      rejectUnauthorized: tls.requireClientCertificate === true,
      ...nodeTlsServerTimeouts(timeouts),
      ...serverTlsPolicy
    })
  answerClientErrors(server)
  // no renegotiation: a connection's client certificate is the one of its handshake (identity.ts)
  if (tls !== undefined) server.on("secureConnection", fixPeerCertificate)
  return server
}

/** A listener with its TLS files (or none: plain HTTP). */
export interface ListenerOptions {
  readonly name: string
  readonly host: string
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly tls?: TlsFiles
}

/** A listener whose TLS, if any, is the ServerTls in context. */
export interface ListenerSpec {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
}

export interface HttpServersOptions extends Omit<PlatformOptions, "maxBodyBytes"> {
  /** Default DEFAULT_MAX_BODY_BYTES (1 MiB). */
  readonly maxBodyBytes?: number
  readonly listeners: ReadonlyArray<ListenerSpec>
  /**
   * Public GET routes with a constant answer (`/version`), served in front of the platform and the
   * router (fixedRoutes.ts) with the AuthorizationProvider in context; the router still serves them
   * when an exporting tracer is in place.
   */
  readonly fixedRoutes?: ReadonlyArray<FixedRoute>
}

export interface BoundListener {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly url: string
}

/**
 * An HttpApp in front of the platform and the API app, per listener: it answers its own few
 * requests and hands every other to `next` (the platform, then the router). A server whose hot
 * routes cost more in the HttpApi pipeline than in their own work answers them here (the
 * verifier's push attestations: src/verifier/http/v3/directRoutes.ts).
 */
export interface FrontApp {
  readonly app: <E, R>(next: HttpApp.Default<E, R>) => HttpApp.Default<E, R>
  /**
   * Requests served without the HTTP server span: its URL parse and attributes cost a hot route
   * as much as the front app saves (the front app counts its requests in the metrics itself).
   */
  readonly untraced?: (request: HttpServerRequest.HttpServerRequest) => boolean
}

/** The front app of each listener (optional in context; undefined for a listener without one). */
export class FrontApps extends Context.Tag("attest/http/FrontApps")<
  FrontApps,
  (listener: Listener) => FrontApp | undefined
>() {}

/** Where each listener actually listens (its port is known only after binding when 0 was asked). */
export class BoundListeners extends Context.Tag("attest/http/BoundListeners")<
  BoundListeners,
  ReadonlyMap<string, BoundListener>
>() {}

/** Effect's own tracer: its spans go nowhere (an exporter replaces it: src/ops/Tracing.ts). */
const nativeTracer = Effect.runSync(Effect.tracer)

const bindAll = (options: PlatformOptions, listeners: ReadonlyArray<ListenerOptions>, fixedRoutes: ReadonlyArray<FixedRoute> = []) =>
  Effect.gen(function*() {
    // the API's app from its router with each route noting its template as it is reached, for the
    // request metrics' route label (requestMetrics.ts): the router's own match, no second matcher
    const router = yield* HttpApiBuilder.Router
    const app = yield* Effect.provideService(HttpApiBuilder.httpApp, HttpApiBuilder.Router, { ...router, router: Effect.map(router.router, labelRoutes) })
    const fronts = yield* Effect.serviceOption(FrontApps)
    const timeouts = yield* ListenerTimeouts
    const provider = yield* Effect.serviceOption(AuthorizationProvider)
    // with an exporter every request keeps its server span, so the router answers fixed routes too;
    // without one nobody reads spans, and building them (URL parse, attributes, ids) is not done at all
    const exporting = (yield* Effect.tracer) !== nativeTracer
    const fixed = fixedRoutes.length > 0 && !exporting ? Option.getOrUndefined(provider) : undefined
    const runtime = yield* Effect.runtime<never>()
    const bound = new Map<string, BoundListener>()
    for (const l of listeners) {
      const node = nodeServer(l.tls === undefined ? { timeouts } : { tls: l.tls, timeouts })
      const server = yield* serveNode(l.name, node, { host: l.host, port: l.port })
      const listener: Listener = { name: l.name, tls: l.tls !== undefined }
      // wrap the app itself: a middleware given to serve() runs after the platform already answered failures
      const platformApp = platformMiddleware(options)(app)
      const front = Option.isSome(fronts) ? fronts.value(listener) : undefined
      // the server takes its runtime (the listener's FiberRefs, the tracer's switch) from where serve() runs
      const serving = withListenerRefs(options, listener)(server.serve(front === undefined ? platformApp : front.app(platformApp)))
      if (!exporting) {
        // no exporter: no server span, and the handlers' spans are Effect's no-op ones (no ids,
        // attributes or clock reads for spans nobody reads)
        yield* Effect.withTracerEnabled(HttpMiddleware.withTracerDisabledWhenEffect(serving, () => true), false)
      } else {
        const untraced = front?.untraced
        yield* untraced === undefined ? serving : HttpMiddleware.withTracerDisabledWhenEffect(serving, untraced)
      }
      if (fixed !== undefined) {
        const restore = answerFixedRoutesFirst(node, fixedRoutes, listener, fixed, runtime)
        yield* Effect.addFinalizer(() => Effect.sync(restore))
      }
      const address = node.address() as AddressInfo
      const url = `${l.tls === undefined ? "http" : "https"}://${formatAddress(address.address, address.port)}`
      bound.set(l.name, { name: l.name, host: address.address, port: address.port, tls: l.tls !== undefined, url })
      yield* Effect.logInfo(`${l.name} listening on ${url}`)
    }
    return bound as ReadonlyMap<string, BoundListener>
  })

const platformLayers = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(
    Layer.provide(HttpApiBuilder.middleware(envelopeUndeclared)),
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
    Layer.provide(NodeHttpServer.layerContext)
  )

export const HttpServers = {
  /** The HttpApi in context on every listener; `tls: true` listeners use the ServerTls in context. */
  layer: (options: HttpServersOptions) =>
    platformLayers(Layer.scoped(
      BoundListeners,
      Effect.flatMap(ServerTls, (tls) =>
        bindAll(
          { ...options, maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES },
          options.listeners.map(({ tls: secure, ...l }) => secure ? { ...l, tls: { key: tls.key, cert: tls.cert, clientCa: tls.clientCa } } : l),
          options.fixedRoutes
        ))
    )),

  /** The same with TLS files given per listener (tests of the platform itself). */
  layerWith: (options: PlatformOptions & { readonly listeners: ReadonlyArray<ListenerOptions> }) =>
    platformLayers(Layer.scoped(BoundListeners, bindAll(options, options.listeners)))
} as const
