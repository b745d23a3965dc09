/**
 * The request platform shared by registrar, verifier and agent, in front of an HttpApi app: the
 * body read once within its byte and JSON-depth limits (src/http/body.ts), JSON only on the v2
 * family (415 in the envelope for another media type: mediaType.ts), the version prefix,
 * trailing-slash normalisation, `Retry-After` on every 503, the envelope for every answer, and the
 * request metrics (requestMetrics.ts).
 * Listeners (node servers with the TLS policy and the clientError hook) are src/http/HttpServers.ts.
 */
import { FileSystem, Headers, type HttpApp, HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Context, Effect, Either, type Fiber, type FiberId, FiberRef, FiberRefs, Option } from "effect"
import { StatusText } from "../../schemas/Envelope.js"
import { bodyRefusal, DEFAULT_MAX_JSON_DEPTH, hasBody, readBoundedBody, withBodyText } from "./body.js"
import { currentMaxBodyBytes, envelopeDefects, envelopeResponse, originalRequestLine } from "./envelope.js"
import { currentListener, type Listener } from "./identity.js"
import { currentRequestPath, jsonApiPlatformError } from "./jsonapi.js"
import { bodyMediaRefusal, PAYLOAD_METHODS } from "./mediaType.js"
import { currentMatchedRoute, matchedRouteCell, recordRequestMetrics } from "./requestMetrics.js"
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

/** A fiber's FiberRefs set for one request and put back when it ends. */
export type RefValues = ReadonlyArray<readonly [FiberRef.FiberRef<any>, unknown]>
/** The running fiber's own setter (effect's FiberRuntime has it; the public RuntimeFiber type does not name it). */
interface SettableFiber {
  readonly id: () => FiberId.Runtime
  readonly getFiberRef: <A>(ref: FiberRef.FiberRef<A>) => A
  /**
   * Its FiberRefs as they are: what its own setFiberRef (Effect.locally) updates. `getFiberRefs()`
   * first writes the runtime flags into them, one more copy of the map each call (for a snapshot
   * a child fiber inherits; an update in place needs none).
   */
  readonly _fiberRefs: FiberRefs.FiberRefs
  readonly setFiberRefs: (refs: FiberRefs.FiberRefs) => void
}
/** FiberRefs.updateManyAs's entries: each ref with its new value for one fiber. */
type Entries = Parameters<typeof FiberRefs.updateManyAs>[1]["entries"]

/**
 * Sets `values` on the running fiber in one update of its FiberRefs: what `Effect.locally` does
 * per ref without the restore, but each `locally` copies the fiber's whole FiberRefs map twice
 * (six per request were a tenth of a GET's CPU). For a fiber that ends with its request.
 */
export const unsafeSetRefs = (runtimeFiber: Fiber.RuntimeFiber<any, any>, values: RefValues): void => {
  if (values.length === 0) return
  const fiber = runtimeFiber as unknown as SettableFiber
  const id = fiber.id()
  const entries = values.map(([ref, value]) => [ref, [[id, value]]] as const) as unknown as Entries
  fiber.setFiberRefs(FiberRefs.updateManyAs(fiber._fiberRefs, { entries }))
}

/** unsafeSetRefs as an effect on the fiber that runs it. */
export const setRequestRefs = (values: RefValues): Effect.Effect<void> =>
  Effect.withFiberRuntime<void>((fiber) => {
    unsafeSetRefs(fiber, values)
    return Effect.void
  })

/** unsafeSetRefs, returning what puts the previous values back (also one update). */
const setRefs = (runtimeFiber: Fiber.RuntimeFiber<any, any>, values: RefValues): () => void => {
  const fiber = runtimeFiber as unknown as SettableFiber
  const saved: RefValues = values.map(([ref]) => [ref, fiber.getFiberRef(ref)] as const)
  unsafeSetRefs(runtimeFiber, values)
  return () => unsafeSetRefs(runtimeFiber, saved)
}

/**
 * `app` with `request` in place of the fiber's in one update of its FiberRefs: Effect.provideService
 * copies them twice and runs a dozen operations. For the platform's request fiber, whose context
 * the platform puts back as the request ends (it lists `FiberRef.currentContext` in its refs).
 */
const withRequest = <A, E, R>(
  request: HttpServerRequest.HttpServerRequest,
  app: Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, HttpServerRequest.HttpServerRequest>> =>
  Effect.withFiberRuntime((fiber) => {
    unsafeSetRefs(fiber, [[FiberRef.currentContext, Context.add(fiber.currentContext, HttpServerRequest.HttpServerRequest, request)]])
    return app as Effect.Effect<A, E, Exclude<R, HttpServerRequest.HttpServerRequest>>
  })

/**
 * What every request of a listener shares, set once around `serve()` (the server forks each
 * request's fiber from the runtime it captured there) rather than per request: the listener, the
 * body limit its 413 names, and the platform's own body limit.
 */
export const withListenerRefs = (options: PlatformOptions, listener: Listener) => <A, E, R>(serve: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  serve.pipe(
    Effect.locally(currentListener, listener),
    Effect.locally(currentMaxBodyBytes, options.maxBodyBytes),
    Effect.provideService(HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(options.maxBodyBytes)))
  )

/**
 * Version prefix, body limit and envelope around the app, per listener; its server is served
 * `withListenerRefs` of the same listener. The app's router names the route a request reaches in
 * the request's cell (requestMetrics.ts `labelRoutes`), for the request metrics.
 */
export const platformMiddleware = (options: PlatformOptions) => {
  const unversioned = new Set(options.unversioned)
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R> => {
    const limits = { maxBytes: options.maxBodyBytes, maxDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH }
    /** Where a request goes: its path without trailing slashes, its version prefix, its family. */
    const targetOf = (rawPath: string) => {
      // `/v2.6/agents/` and `/v2.6/agents` are the same route, as in Keylime
      const path = rawPath.length > 1 && rawPath.endsWith("/") ? rawPath.replace(/\/+$/, "") || "/" : rawPath
      const match = unversioned.has(path) ? undefined : matchVersionPrefix(path, options.versions)
      // API 3.0 answers in JSON:API, everything else in the v2 envelope; 3.0's verify/* share the
      // v2 shapes (spec §4.4, push-model.md §1.2) and are answered by the v2 routes
      const sharesV2 = match?._tag === "Versioned" && match.version.major >= 3 && V3_SHARED_V2.test(match.rest)
      const jsonApi = match?._tag === "Versioned" && match.version.major >= 3 && !sharesV2
      return { path, match, jsonApi }
    }
    const route = (
      request: HttpServerRequest.HttpServerRequest,
      rawPath: string,
      query: string,
      { jsonApi, match, path }: ReturnType<typeof targetOf>
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
      const refuse = (code: number, text: string) =>
        Effect.succeed(jsonApi ? jsonApiPlatformError(code, text, rawPath) : envelopeResponse(code, text))
      const withUrl = (url: string, body: string | undefined) => {
        // the v2 family's payload is JSON, so the API's payload decoder is told JSON: it reads
        // `application/vnd.api+json` as bytes otherwise, and for a request without a body that
        // names `multipart/form-data` it waited for parts that never come (no answer at all; found
        // by the registrar-routes fuzzer). Without a Content-Type, or with JSON's own, or on a
        // method without a payload, the decoder reads JSON already: the headers are kept as sent
        const contentType = request.headers["content-type"]
        const toldJson = jsonApi || contentType === undefined || !PAYLOAD_METHODS.has(request.method) || contentType.toLowerCase().includes("application/json")
        const modified = toldJson
          ? request.modify({ url })
          : request.modify({ url, headers: Headers.set(request.headers, "content-type", "application/json") })
        return withRequest(body === undefined ? modified : withBodyText(modified, body), app)
      }
      const dispatch = (body: string | undefined): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
        if (match === undefined) return withUrl(path + query, body)
        switch (match._tag) {
          case "Unversioned":
            return Effect.succeed(envelopeResponse(404, StatusText.notFound(request.method, rawPath)))
          case "Unsupported":
            return Effect.succeed(envelopeResponse(
              404,
              StatusText.unsupportedVersion(
                match.requested === "" ? "(none)" : match.requested,
                options.versions.supported
              )
            ))
          case "Versioned": {
            // v3 routes keep a `/v3` prefix in the router (their paths overlap the v2 ones); a v2
            // request cannot reach them through `/v2.6/v3/…`
            const reachesV3 = match.rest === V3_ROUTE_PREFIX || match.rest.startsWith(`${V3_ROUTE_PREFIX}/`)
            if (!jsonApi && reachesV3) return refuse(404, StatusText.notFound(request.method, rawPath))
            const url = jsonApi ? (match.rest === "/" ? V3_ROUTE_PREFIX : V3_ROUTE_PREFIX + match.rest) : match.rest
            return withUrl(url + query, body)
          }
        }
      }
      // the body is read (bounded in bytes and JSON depth) before routing: nothing decodes a refused one
      if (!hasBody(request)) return dispatch(undefined)
      const ownBody = options.ownBody !== undefined && options.ownBody(request.method, match?._tag === "Versioned" ? match.rest : path)
      if (ownBody) {
        const media = jsonApi ? undefined : bodyMediaRefusal(request.method, request.headers["content-type"])
        return media !== undefined ? refuse(415, StatusText.unsupportedMediaType(media)) : dispatch(undefined)
      }
      return Effect.flatMap(Effect.either(readBoundedBody(request, limits)), (read) => {
        if (Either.isLeft(read)) {
          const refused = bodyRefusal(read.left)
          return refuse(refused.code, refused.text)
        }
        // the v2 family takes JSON only (API 3.0 handlers check their JSON:API media type themselves)
        const media = jsonApi ? undefined : bodyMediaRefusal(request.method, request.headers["content-type"])
        return media !== undefined ? refuse(415, StatusText.unsupportedMediaType(media)) : dispatch(read.right)
      })
    }
    return Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, unknown, unknown>((fiber) => {
      const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
      const { path, query } = splitUrl(request.url)
      const target = targetOf(path)
      // the router's route, once the request reaches it (a refused body, an unknown version never do);
      // the context is listed as it is so that the one withRequest changes is put back with the rest
      const routed = matchedRouteCell()
      const refs: RefValues = [[originalRequestLine, { method: request.method, path }], [currentRequestPath, path], [currentMatchedRoute, routed], [FiberRef.currentContext, fiber.currentContext]]
      // the version a request was routed under, and its family, for the handlers
      const restore = setRefs(
        fiber,
        target.match?._tag === "Versioned" ? [...refs, [currentApiVersion, target.match.version], [currentFamily, target.jsonApi ? "v3" : "v2"]] : refs
      )
      return route(request, path, query, target).pipe(
        envelopeDefects,
        Effect.map(withRetryAfter),
        recordRequestMetrics(routed),
        Effect.ensuring(Effect.sync(restore))
      )
    }) as unknown as HttpApp.Default<never, R>
  }
}
