/**
 * The request platform shared by registrar, verifier and agent, in front of an HttpApi app: the
 * body read once within its byte and JSON-depth limits (src/http/body.ts), the version prefix,
 * trailing-slash normalisation, `Retry-After` on every 503, the envelope for every answer, and the
 * request metrics (requestMetrics.ts).
 * Listeners (node servers with the TLS policy and the clientError hook) are layers/HttpServers.ts.
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { StatusText } from "../../schemas/Envelope.js"
import { bodyRefusedResponse, DEFAULT_MAX_JSON_DEPTH, hasBody, readBoundedBody, withBodyText } from "./body.js"
import { currentMaxBodyBytes, envelopeDefects, envelopeResponse, originalRequestLine } from "./envelope.js"
import { currentListener, type Listener } from "./identity.js"
import { recordRequestMetrics } from "./requestMetrics.js"
import { currentApiVersion, matchVersionPrefix, type VersionSet } from "./versions.js"

export interface PlatformOptions {
  readonly versions: VersionSet
  /** Paths served without a version prefix, e.g. `/version`. */
  readonly unversioned: ReadonlyArray<string>
  readonly maxBodyBytes: number
  /** Deepest JSON nesting accepted in a body (default DEFAULT_MAX_JSON_DEPTH). */
  readonly maxJsonDepth?: number
}

/** 1 MiB: registrations and activations are a few KiB; verifier policies set their own larger limit. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

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
      recordRequestMetrics,
      Effect.locally(currentListener, listener),
      Effect.locally(currentMaxBodyBytes, options.maxBodyBytes),
      HttpServerRequest.withMaxBodySize(Option.some(options.maxBodyBytes))
    ) as HttpApp.Default<never, R>
  }
}
