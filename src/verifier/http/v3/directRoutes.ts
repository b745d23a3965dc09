/**
 * The two requests of every push attestation, answered by an HttpApp in front of the platform and
 * the router (layers/HttpServers.ts FrontApps): POST /v3[.m]/agents/<id>/attestations (phase 1)
 * and PATCH /v3[.m]/agents/<id>/attestations/<index> (phase 2), both with an `Authorization`
 * header (an agent's attempt: spec §5.2, no mTLS fallback). Through the platform and the HttpApi
 * router each cost the verifier more CPU than the attestation's own work, and a push attestation
 * then cost more than a pull one (issue 11's target: no more). The answer is the router handler's
 * own (push/Http.ts createAttestationAnswer, submitEvidenceAnswer) after the same authorization;
 * around it this file does what the platform does for them: the body within the byte and
 * JSON-depth limits, the version prefix, Retry-After on a 503, a defect answered 500, the request
 * metrics (with the router's route templates). They are served without the HTTP server span.
 *
 * Anything else goes to the platform and the router: other methods and paths, no `Authorization`
 * header (admins, anonymous callers), a query string, a percent-encoded path, an unsupported
 * version. With an OTLP exporter the router serves these too, so each request keeps its span.
 */
import { type HttpApp, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either, Exit, Layer } from "effect"
import { FrontApps } from "../../../http/HttpServers.js"
import { VerifierConfig } from "../../../config/services.js"
import { bodyRefusal, type BodyRefused, collectBodyText, DEFAULT_MAX_JSON_DEPTH, hasBody, withinDepth } from "../../../http/body.js"
import { currentMaxBodyBytes, envelopeDefects, originalRequestLine } from "../../../http/envelope.js"
import { currentListener, type Listener } from "../../../http/identity.js"
import { currentRequestPath, jsonApiPlatformError } from "../../../http/jsonapi.js"
import { setRequestRefs, withRetryAfter } from "../../../http/platform.js"
import { currentApiVersion, currentFamily, matchVersionPrefix, V3_ROUTE_PREFIX, VERIFIER_VERSIONS } from "../../../http/versions.js"
import { unsafeRecordHttpRequest } from "../../../ops/metrics.js"
import { Attestations } from "../../push/Attestations.js"
import type { V3Authorizer } from "./auth.js"
import { authorizeV3Request, v3Authorizer } from "./authorization.js"
import { createAttestationAnswer, sessionOf, submitEvidenceAnswer, titled } from "./PushHttp.js"

/** `/agents/<id>/attestations[/<index>]` after the version prefix; ids and indexes without `%`. */
const ATTESTATIONS = /^\/agents\/([^/%]+)\/attestations(?:\/([^/%]+))?$/

/** The router's templates for the two routes (the `route` label of the request metrics). */
const ROUTES = {
  create: `${V3_ROUTE_PREFIX}/agents/:agent_id/attestations`,
  submit: `${V3_ROUTE_PREFIX}/agents/:agent_id/attestations/:index`
} as const

export interface DirectRouteOptions {
  readonly maxBodyBytes: number
  readonly maxJsonDepth?: number
}

/** One of the two requests: where it goes, or undefined for any other request. */
interface Matched {
  readonly agentId: string
  readonly index: string | undefined
  readonly path: string
  readonly version: Extract<ReturnType<typeof matchVersionPrefix>, { readonly _tag: "Versioned" }>["version"]
}

const match = (request: HttpServerRequest.HttpServerRequest): Matched | undefined => {
  const method = request.method
  const rawPath = request.url
  if ((method !== "POST" && method !== "PATCH") || request.headers["authorization"] === undefined || rawPath.includes("?")) return undefined
  const path = rawPath.length > 1 && rawPath.endsWith("/") ? rawPath.replace(/\/+$/, "") : rawPath
  const version = matchVersionPrefix(path, VERIFIER_VERSIONS)
  if (version._tag !== "Versioned" || version.version.major < 3) return undefined
  const m = ATTESTATIONS.exec(version.rest)
  if (m === null || (method === "POST") !== (m[2] === undefined)) return undefined
  return { agentId: m[1]!, index: m[2], path, version: version.version }
}

/** The body text within the limits, read straight from node's request (the platform never read it). */
const readBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number, maxDepth: number) =>
  hasBody(request)
    ? Effect.async<Either.Either<string, BodyRefused>>((resume) =>
      collectBodyText(NodeHttpServerRequest.toIncomingMessage(request), maxBytes, (read) =>
        resume(Effect.succeed(Either.flatMap(read, (text) => withinDepth(text, maxDepth))))))
    : Effect.succeed(Either.right<string>(""))

/** The router's operation of both routes (http/operations.ts push.createAttestation, push.submitEvidence). */
const SUBMIT = { action: "submit_attestation", operationClass: "agent" } as const

const frontApp = (options: DirectRouteOptions, attestations: Attestations, authorizer: V3Authorizer, listener: Listener) => {
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH

  const answer = (request: HttpServerRequest.HttpServerRequest, target: Matched) =>
    // what the platform sets for a request, set on this request's own fiber in one update
    // (platform-node forks one per request, and nothing after the answer reads them, so nothing
    // puts them back)
    Effect.zipRight(
      setRequestRefs([
        [currentRequestPath, request.url],
        [originalRequestLine, { method: request.method, path: target.path }],
        [currentApiVersion, target.version],
        [currentFamily, "v3"],
        [currentMaxBodyBytes, options.maxBodyBytes],
        [currentListener, listener]
      ]),
      answerIn(request, target)
    )

  const answerIn = (request: HttpServerRequest.HttpServerRequest, target: Matched) =>
    Effect.gen(function*() {
      const body = yield* readBody(request, options.maxBodyBytes, maxDepth)
      if (Either.isLeft(body)) {
        const refused = bodyRefusal(body.left)
        return jsonApiPlatformError(refused.code, refused.text, request.url)
      }
      const decided = yield* authorizeV3Request(authorizer, request, { ...SUBMIT, resourceAgentId: target.agentId })
      if (Either.isLeft(decided)) return yield* titled(decided.left.status, decided.left.detail)
      const contentType = request.headers["content-type"]
      const sessionId = sessionOf(decided.right)
      return target.index === undefined
        ? yield* createAttestationAnswer(attestations, target.agentId, sessionId, contentType, body.right)
        : yield* submitEvidenceAnswer(attestations, target.agentId, sessionId, target.index, contentType, body.right)
    }).pipe(
      envelopeDefects,
      Effect.map(withRetryAfter)
    )

  /** Counted as the router counts its requests, under its route templates. */
  const counted = (request: HttpServerRequest.HttpServerRequest, target: Matched) => {
    const started = process.hrtime.bigint()
    return Effect.onExit(answer(request, target), (exit) =>
      Effect.sync(() =>
        unsafeRecordHttpRequest(
          listener.name,
          request.method,
          target.index === undefined ? ROUTES.create : ROUTES.submit,
          Exit.isSuccess(exit) ? exit.value.status : 500,
          Number(process.hrtime.bigint() - started) / 1e9
        )
      ))
  }

  // the whole app runs uninterruptibly (platform-node's toHandled): both phases are a few
  // statements, and a phase 2 cut between storing the evidence and starting its verdict would leave it pending
  return <E, R>(next: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> => {
      const target = match(request)
      return target === undefined ? next : counted(request, target)
    })
}

export const PushDirectRoutes = (options: DirectRouteOptions) =>
  Layer.effect(
    FrontApps,
    Effect.gen(function*() {
      const config = yield* VerifierConfig
      const attestations = yield* Attestations
      const authorizer = yield* v3Authorizer
      // with an exporter every request keeps the router's server span
      if (config.otlp_endpoint.trim() !== "") return () => undefined
      return (listener: Listener) => ({ app: frontApp(options, attestations, authorizer, listener), untraced: (request: HttpServerRequest.HttpServerRequest) => match(request) !== undefined })
    })
  )
