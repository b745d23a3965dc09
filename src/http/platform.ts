/**
 * The request platform shared by registrar, verifier and agent, in front of an HttpApi app: the
 * body read once within its byte and JSON-depth limits (src/http/body.ts), JSON only on the v2
 * family (415 in the envelope for another media type: mediaType.ts), the version prefix,
 * trailing-slash normalisation, `Retry-After` on every 503, the envelope for every answer, and the
 * request metrics (requestMetrics.ts).
 * Listeners (node servers with the TLS policy and the clientError hook) are src/http/HttpServers.ts.
 */
import { Headers, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { StatusText } from "../../schemas/Envelope.js"
import { bodyRefusal, DEFAULT_MAX_JSON_DEPTH, hasBody, readBoundedBody, withBodyText } from "./body.js"
import { currentMaxBodyBytes, envelopeDefects, envelopeResponse, originalRequestLine } from "./envelope.js"
import { currentListener, type Listener } from "./identity.js"
import { currentRequestPath, jsonApiPlatformError } from "./jsonapi.js"
import { bodyMediaRefusal } from "./mediaType.js"
import { recordRequestMetrics } from "./requestMetrics.js"
import { currentApiVersion, currentFamily, matchVersionPrefix, V3_ROUTE_PREFIX, type VersionSet } from "./versions.js"

export interface PlatformOptions {
  readonly versions: VersionSet
  /** Paths served without a version prefix, e.g. `/version`. */
  readonly unversioned: ReadonlyArray<string>
  readonly maxBodyBytes: number
  /** Deepest JSON nesting accepted in a body (default DEFAULT_MAX_JSON_DEPTH). */
  readonly maxJsonDepth?: number
  /**
   * Routes (method and path after the version prefix) whose handler reads the body itself, with its
   * own limits: the platform checks only the media type (the verifier's verify/evidence reads it
   * once admitted to its workers, which decode it off the event loop).
   */
  readonly ownBody?: (method: string, path: string) => boolean
}

/** 1 MiB: registrations and activations are a few KiB; verifier policies set their own larger limit. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

const splitUrl = (url: string): { readonly path: string; readonly query: string } => {
  const i = url.indexOf("?")
  return i === -1 ? { path: url, query: "" } : { path: url.slice(0, i), query: url.slice(i) }
}

/** API 3.0 paths served by the v2 routes with the v2 envelope. */
const V3_SHARED_V2 = /^\/verify\/(?:identity|evidence)$/

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
        // `/v2.6/agents/` and `/v2.6/agents` are the same route, as in Keylime
        const path = rawPath.length > 1 && rawPath.endsWith("/") ? rawPath.replace(/\/+$/, "") || "/" : rawPath
        const match = unversioned.has(path) ? undefined : matchVersionPrefix(path, options.versions)
        // API 3.0 answers in JSON:API, everything else in the v2 envelope; 3.0's verify/* share the
        // v2 shapes (spec §4.4, push-model.md §1.2) and are answered by the v2 routes
        const sharesV2 = match?._tag === "Versioned" && match.version.major >= 3 && V3_SHARED_V2.test(match.rest)
        const jsonApi = match?._tag === "Versioned" && match.version.major >= 3 && !sharesV2
        const refuse = (code: number, text: string) =>
          jsonApi ? jsonApiPlatformError(code, text, rawPath) : envelopeResponse(code, text)
        // the body is read (bounded in bytes and JSON depth) before routing: nothing decodes a refused one
        let body: string | undefined
        const ownBody = options.ownBody !== undefined && options.ownBody(request.method, match?._tag === "Versioned" ? match.rest : path)
        if (ownBody && hasBody(request)) {
          const media = jsonApi ? undefined : bodyMediaRefusal(request.method, request.headers["content-type"])
          if (media !== undefined) return refuse(415, StatusText.unsupportedMediaType(media))
        } else if (hasBody(request)) {
          const read = yield* Effect.either(readBoundedBody(request, limits))
          if (Either.isLeft(read)) {
            const refused = bodyRefusal(read.left)
            return refuse(refused.code, refused.text)
          }
          body = read.right
          // the v2 family takes JSON only (API 3.0 handlers check their JSON:API media type themselves)
          const media = jsonApi ? undefined : bodyMediaRefusal(request.method, request.headers["content-type"])
          if (media !== undefined) return refuse(415, StatusText.unsupportedMediaType(media))
        }
        const withUrl = <E, R>(app: HttpApp.Default<E, R>, url: string) => {
          // the v2 family's payload is JSON, so the API's payload decoder is told JSON: it reads
          // `application/vnd.api+json` as bytes otherwise, and for a request without a body that
          // names `multipart/form-data` it waited for parts that never come (no answer at all; found
          // by the registrar-routes fuzzer)
          const modified = jsonApi
            ? request.modify({ url })
            : request.modify({ url, headers: Headers.set(request.headers, "content-type", "application/json") })
          return Effect.provideService(
            app,
            HttpServerRequest.HttpServerRequest,
            body === undefined ? modified : withBodyText(modified, body)
          )
        }
        if (match === undefined) {
          return yield* withUrl(app, path + query)
        }
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
          case "Versioned": {
            // v3 routes keep a `/v3` prefix in the router (their paths overlap the v2 ones); a v2
            // request cannot reach them through `/v2.6/v3/…`
            const reachesV3 = match.rest === V3_ROUTE_PREFIX || match.rest.startsWith(`${V3_ROUTE_PREFIX}/`)
            if (!jsonApi && reachesV3) return refuse(404, StatusText.notFound(request.method, rawPath))
            const url = jsonApi ? (match.rest === "/" ? V3_ROUTE_PREFIX : V3_ROUTE_PREFIX + match.rest) : match.rest
            return yield* withUrl(app, url + query).pipe(
              Effect.locally(currentApiVersion, match.version),
              Effect.locally(currentFamily, jsonApi ? "v3" : "v2")
            )
          }
        }
      }).pipe(Effect.locally(currentRequestPath, rawPath))
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
