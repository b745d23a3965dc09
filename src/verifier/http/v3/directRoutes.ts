/**
 * The two requests of every push attestation, answered straight from node's request: POST
 * /v3[.m]/agents/<id>/attestations (phase 1) and PATCH /v3[.m]/agents/<id>/attestations/<index>
 * (phase 2), both with an `Authorization` header (an agent's attempt: spec §5.2, no mTLS
 * fallback). Through the platform and the HttpApi router each cost the verifier more CPU than the
 * attestation's own work, and a push attestation then cost more than a pull one (issue 11's target:
 * no more). The answer is the router handler's own (push/Http.ts createAttestationAnswer,
 * submitEvidenceAnswer) after the same authorization; around it this file does what the platform
 * does for them: the body within the byte and JSON-depth limits, the version prefix, Retry-After on
 * a 503, a defect answered 500, the request metrics (with the router's route templates).
 *
 * Anything else goes to the router: other methods and paths, no `Authorization` header (admins,
 * anonymous callers), a query string, a percent-encoded path, an unsupported version. With an OTLP
 * exporter the router serves these too, so each request keeps its HTTP server span.
 */
import type { HttpServerResponse } from "@effect/platform"
import { Effect, Either, Layer, Runtime } from "effect"
import type * as http from "node:http"
import { type DirectHandler, DirectRoutes } from "../../../http/HttpServers.js"
import { VerifierConfig } from "../../../config/services.js"
import { bodyRefusal, type BodyRefused, collectBodyText, DEFAULT_MAX_JSON_DEPTH, hasBody, withinDepth } from "../../../http/body.js"
import { currentMaxBodyBytes, envelopeDefects, originalRequestLine } from "../../../http/envelope.js"
import { currentListener } from "../../../http/identity.js"
import { currentRequestPath, jsonApiPlatformError } from "../../../http/jsonapi.js"
import { withRetryAfter } from "../../../http/platform.js"
import { currentApiVersion, currentFamily, matchVersionPrefix, V3_ROUTE_PREFIX, VERIFIER_VERSIONS } from "../../../http/versions.js"
import { unsafeRecordHttpRequest } from "../../../ops/metrics.js"
import type { AuthorizationProvider } from "../../../http/authorization.js"
import { Attestations } from "../../push/Attestations.js"
import { authorizeIdentified, identifyByAuthorization } from "./auth.js"
import { createAttestationAnswer, sessionOf, submitEvidenceAnswer, titled } from "./PushHttp.js"
import type { Sessions } from "../../push/Sessions.js"

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

/** The request's writer: the platform-node server's way (status and headers at once, then the body). */
const writeResponse = (res: http.ServerResponse, response: HttpServerResponse.HttpServerResponse) => {
  if (res.writableEnded) return
  const body = response.body
  res.writeHead(response.status, response.headers as http.OutgoingHttpHeaders)
  if (body._tag === "Uint8Array") res.end(body.body)
  else if (body._tag === "Raw" && typeof body.body === "string") res.end(body.body)
  else res.end()
}

export const PushDirectRoutes = (options: DirectRouteOptions) =>
  Layer.effect(
    DirectRoutes,
    Effect.gen(function*() {
      const config = yield* VerifierConfig
      const attestations = yield* Attestations
      const runtime = yield* Effect.runtime<Sessions | AuthorizationProvider>()
      const limits = { maxBytes: options.maxBodyBytes, maxDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH }
      // with an exporter every request keeps the router's server span
      if (config.otlp_endpoint.trim() !== "") return () => undefined

      return (listener): DirectHandler => {
        // what every direct answer runs under, set once per listener instead of per request
        const run = Runtime.runFork(
          Runtime.setFiberRef(Runtime.setFiberRef(Runtime.setFiberRef(runtime, currentListener, listener), currentFamily, "v3"), currentMaxBodyBytes, options.maxBodyBytes)
        )
        return (req, res) => {
          const method = req.method
          const header = req.headers.authorization
          const rawPath = req.url ?? ""
          if ((method !== "POST" && method !== "PATCH") || header === undefined || rawPath.includes("?")) return false
          const path = rawPath.length > 1 && rawPath.endsWith("/") ? rawPath.replace(/\/+$/, "") : rawPath
          const version = matchVersionPrefix(path, VERIFIER_VERSIONS)
          if (version._tag !== "Versioned" || version.version.major < 3) return false
          const m = ATTESTATIONS.exec(version.rest)
          if (m === null || (method === "POST") !== (m[2] === undefined)) return false
          const agentId = m[1]!
          const index = m[2]
          const route = index === undefined ? ROUTES.create : ROUTES.submit
          const started = process.hrtime.bigint()

          const answer = (body: Either.Either<string, BodyRefused>) =>
            Effect.gen(function*() {
              if (Either.isLeft(body)) {
                const refused = bodyRefusal(body.left)
                return jsonApiPlatformError(refused.code, refused.text, rawPath)
              }
              const decided = yield* Effect.flatMap(identifyByAuthorization(header), (caller) => authorizeIdentified(caller, "submit_attestation", "agent", agentId))
              if (Either.isLeft(decided)) return yield* titled(decided.left.status, decided.left.detail)
              const contentType = req.headers["content-type"]
              const sessionId = sessionOf(decided.right)
              return index === undefined
                ? yield* createAttestationAnswer(attestations, agentId, sessionId, contentType, body.right)
                : yield* submitEvidenceAnswer(attestations, agentId, sessionId, index, contentType, body.right)
            }).pipe(
              envelopeDefects,
              Effect.map(withRetryAfter),
              Effect.tap((response) =>
                Effect.sync(() => {
                  unsafeRecordHttpRequest(listener.name, method, route, response.status, Number(process.hrtime.bigint() - started) / 1e9)
                  writeResponse(res, response)
                })
              ),
              Effect.locally(currentRequestPath, rawPath),
              Effect.locally(originalRequestLine, { method, path }),
              Effect.locally(currentApiVersion, version.version)
            )
          // the body is read before the answer's fiber starts, which then runs to its end even if
          // the client goes away: both phases are a few statements, and a phase 2 cut between
          // storing the evidence and starting its verdict would leave it pending
          if (hasBody(req)) collectBodyText(req, limits.maxBytes, (read) => run(answer(Either.flatMap(read, (text) => withinDepth(text, limits.maxDepth)))))
          else run(answer(Either.right("")))
          return true
        }
      }
    })
  )
