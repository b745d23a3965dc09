/**
 * The server platform shared by registrar, verifier and agent: one HttpApi app served on any number
 * of listeners (plain HTTP and/or HTTPS with optional client certificates), each started on a
 * configurable address and stopped with its scope. In front of the app: the body read once within
 * its byte and JSON-depth limits (src/http/body.ts), the version prefix, trailing-slash
 * normalisation and the envelope for every answer, including requests node's parser refuses
 * (src/http/clientError.ts).
 */
import { HttpApiBuilder, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Either, Layer, Option } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { StatusText } from "../../schemas/Envelope.js"
import { bodyRefusedResponse, DEFAULT_MAX_JSON_DEPTH, hasBody, readBoundedBody, withBodyText } from "./body.js"
import { answerClientErrors } from "./clientError.js"
import { serveNode } from "./listen.js"
import {
  currentMaxBodyBytes,
  envelopeDefects,
  envelopeResponse,
  envelopeUndeclared,
  originalRequestLine
} from "./envelope.js"
import { currentListener, type Listener } from "./identity.js"
import { serverTlsPolicy } from "./tlsPolicy.js"
import { currentApiVersion, matchVersionPrefix, type VersionSet } from "./versions.js"

export interface TlsFiles {
  /** PEM texts, not paths: the caller reads files (or generates them) once at start-up. */
  readonly key: string
  readonly cert: string
  /** Trust anchors for client certificates; without it no client certificate is requested. */
  readonly clientCa?: string
}

export interface ListenerOptions {
  readonly name: string
  readonly host: string
  /** 0 picks a free port (tests). */
  readonly port: number
  readonly tls?: TlsFiles
}

export interface PlatformOptions {
  readonly versions: VersionSet
  /** Paths served without a version prefix, e.g. `/version`. */
  readonly unversioned: ReadonlyArray<string>
  readonly maxBodyBytes: number
  /** Deepest JSON nesting accepted in a body (default DEFAULT_MAX_JSON_DEPTH). */
  readonly maxJsonDepth?: number
  readonly listeners: ReadonlyArray<ListenerOptions>
}

export interface BoundListener {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly url: string
}

/** Where each listener actually listens (its port is known only after binding when 0 was asked). */
export class BoundListeners extends Context.Tag("attest/http/BoundListeners")<
  BoundListeners,
  ReadonlyMap<string, BoundListener>
>() {}

/** 1 MiB: registrations and activations are a few KiB; verifier policies set their own larger limit. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

const makeNodeServer = (options: ListenerOptions): http.Server => {
  const server = options.tls === undefined
    ? http.createServer({ keepAliveTimeout: 5000 })
    : https.createServer({
      key: options.tls.key,
      cert: options.tls.cert,
      ...(options.tls.clientCa === undefined ? {} : { ca: options.tls.clientCa }),
      // the handshake succeeds without a (valid) certificate; each operation's authorization decides
      requestCert: options.tls.clientCa !== undefined,
      rejectUnauthorized: false,
      keepAliveTimeout: 5000,
      ...serverTlsPolicy
    })
  answerClientErrors(server)
  return server
}

const splitUrl = (url: string): { readonly path: string; readonly query: string } => {
  const i = url.indexOf("?")
  return i === -1 ? { path: url, query: "" } : { path: url.slice(0, i), query: url.slice(i) }
}

/** Seconds a client is asked to wait after a 503 (a database or dependency momentarily down). */
export const RETRY_AFTER_SECONDS = 2

/** Every 503 says when to come back. */
export const withRetryAfter = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse =>
  response.status === 503 && response.headers["retry-after"] === undefined
    ? HttpServerResponse.setHeader(response, "retry-after", String(RETRY_AFTER_SECONDS))
    : response

/** Version prefix, body limit and envelope around the app, per listener. */
export const platformMiddleware = (options: PlatformOptions, listener: Listener) => {
  const unversioned = new Set(options.unversioned)
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R> => {
    const limits = { maxBytes: options.maxBodyBytes, maxDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH }
    const route = (request: HttpServerRequest.HttpServerRequest, rawPath: string, query: string) =>
      Effect.gen(function*() {
        // the body is read (bounded in bytes and JSON depth) before routing: nothing decodes a refused one
        let body: string | undefined
        if (hasBody(request)) {
          const read = yield* Effect.either(readBoundedBody(request, limits))
          if (Either.isLeft(read)) return bodyRefusedResponse(read.left)
          body = read.right
        }
        const withUrl = <E, R>(app: HttpApp.Default<E, R>, url: string) => {
          const modified = request.modify({ url })
          return Effect.provideService(
            app,
            HttpServerRequest.HttpServerRequest,
            body === undefined ? modified : withBodyText(modified, body)
          )
        }
        // `/v2.6/agents/` and `/v2.6/agents` are the same route, as in Keylime
        const path = rawPath.length > 1 && rawPath.endsWith("/") ? rawPath.replace(/\/+$/, "") || "/" : rawPath
        if (unversioned.has(path)) {
          return yield* withUrl(app, path + query)
        }
        const match = matchVersionPrefix(path, options.versions)
        switch (match._tag) {
          case "Unversioned":
            return envelopeResponse(404, StatusText.notFound(request.method, rawPath))
          case "Unsupported":
            return envelopeResponse(
              404,
              StatusText.unsupportedVersion(
                match.requested === "" ? "(none)" : match.requested,
                options.versions.supported
              )
            )
          case "Versioned":
            return yield* withUrl(app, match.rest + query).pipe(
              Effect.locally(currentApiVersion, match.version)
            )
        }
      })
    return Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { path, query } = splitUrl(request.url)
      return yield* route(request, path, query).pipe(
        Effect.locally(originalRequestLine, { method: request.method, path })
      )
    }).pipe(
      envelopeDefects,
      Effect.map(withRetryAfter),
      Effect.locally(currentListener, listener),
      Effect.locally(currentMaxBodyBytes, options.maxBodyBytes),
      HttpServerRequest.withMaxBodySize(Option.some(options.maxBodyBytes))
    ) as HttpApp.Default<never, R>
  }
}

/**
 * Serves the HttpApi built by the layers in context on every listener of `options`. Needs the
 * `HttpApiBuilder.api(...)` layer (handlers) below it.
 */
export const serveApi = (options: PlatformOptions) =>
  Layer.scoped(
    BoundListeners,
    Effect.gen(function*() {
      const app = yield* HttpApiBuilder.httpApp
      const bound = new Map<string, BoundListener>()
      for (const listenerOptions of options.listeners) {
        const nodeServer = makeNodeServer(listenerOptions)
        const server = yield* serveNode(listenerOptions.name, nodeServer, { host: listenerOptions.host, port: listenerOptions.port })
        const listener: Listener = { name: listenerOptions.name, tls: listenerOptions.tls !== undefined }
        // wrap the app itself: a middleware given to serve() runs after the platform already answered failures
        yield* server.serve(platformMiddleware(options, listener)(app))
        const address = nodeServer.address() as AddressInfo
        const tls = listenerOptions.tls !== undefined
        const host = address.family === "IPv6" ? `[${address.address}]` : address.address
        bound.set(listenerOptions.name, {
          name: listenerOptions.name,
          host: address.address,
          port: address.port,
          tls,
          url: `${tls ? "https" : "http"}://${host}:${address.port}`
        })
        yield* Effect.logInfo(`${listenerOptions.name} listening on ${bound.get(listenerOptions.name)!.url}`)
      }
      return bound as ReadonlyMap<string, BoundListener>
    })
  ).pipe(
    Layer.provide(HttpApiBuilder.middleware(envelopeUndeclared)),
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
    Layer.provide(NodeHttpServer.layerContext)
  )
