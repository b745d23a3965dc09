/**
 * The pull agent's HTTP app. It reproduces rust-keylime's routing answers (push-model.md §4):
 * 400 for an unsupported version prefix, per-scope 400/405 texts, 404 "Not Found", and the query
 * and body errors of each endpoint; every answer is the `{code, status, results}` envelope. A plain
 * dispatcher rather than HttpApi, because those scope-level answers are not expressible as routes.
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Schema } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { bodyRefusedResponse, DEFAULT_MAX_JSON_DEPTH, hasBody, readBoundedBody } from "../http/body.js"
import { describeParseError, envelopeResponse } from "../http/envelope.js"
import { DEFAULT_MAX_BODY_BYTES } from "../http/platform.js"
import { type ApiVersion, parseVersion } from "../http/versions.js"
import {
  AgentInfo,
  AgentVersion,
  IdentityQuote,
  IntegrityQuote,
  PubkeyResult,
  RevocationNotice,
  UKeyRequest,
  VerifyResult,
  VKeyRequest
} from "../../schemas/Agent.js"
import { Empty, Envelope } from "../../schemas/Envelope.js"
import { BootstrapKeys } from "./BootstrapKeys.js"
import { AgentRequestError, badRequest } from "./errors.js"
import { AgentIdentity } from "./Identity.js"
import { parseChallenge, parseIdentityQuery, parseIntegrityQuery, type Query } from "./queries.js"
import { Quotes } from "./Quotes.js"
import { checkRevocation } from "./revocation.js"
import { requestTargetUrl } from "../http/requestTarget.js"

/** rust-keylime's SUPPORTED_API_VERSIONS plus 2.0 (spec §9: quotes and keys exist since 2.0). */
export const AGENT_API_VERSIONS: ReadonlyArray<string> = ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]

export interface AgentHttpOptions {
  readonly versions?: ReadonlyArray<string>
  /** Largest request body (default: the registrar's DEFAULT_MAX_BODY_BYTES) and deepest JSON nesting. */
  readonly maxBodyBytes?: number
  readonly maxJsonDepth?: number
  /** PEM of the certificate that signs revocation messages; unset: messages are logged unchecked. */
  readonly revocationCert?: string | undefined
  /** Or a file read when a notification arrives (Keylime's default arrives with the payload). */
  readonly revocationCertFile?: string | undefined
}

const revocationCertOf = (o: AgentHttpOptions): Effect.Effect<string | undefined> =>
  o.revocationCert !== undefined || o.revocationCertFile === undefined
    ? Effect.succeed(o.revocationCert)
    : Effect.sync(() => (existsSync(o.revocationCertFile!) ? readFileSync(o.revocationCertFile!, "utf8") : undefined))

/**
 * A success envelope encoded with the endpoint's schema (schemas/Agent.ts, the same AgentApi
 * clients decode with); a value that does not encode is a bug, answered 500 by the catch-all.
 */
const okWith = <A, I>(schema: Schema.Schema<A, I>) => {
  const encode = Schema.encode(Envelope(schema))
  return (value: A): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
    Effect.map(Effect.orDie(encode(value)), (body) => HttpServerResponse.unsafeJson(body, { status: 200 }))
}
const okInfo = okWith(AgentInfo)
const okVersion = okWith(AgentVersion)
const okPubkey = okWith(PubkeyResult)
const okVerify = okWith(VerifyResult)
const okIdentity = okWith(IdentityQuote)
const okIntegrity = okWith(IntegrityQuote)
const okEmpty = okWith(Empty)
const fail = (e: AgentRequestError) => envelopeResponse(e.status, e.message)
const methodNotAllowed = (message: string, allow?: string) =>
  HttpServerResponse.unsafeJson({ code: 405, status: message, results: {} }, {
    status: 405,
    ...(allow ? { headers: { allow } } : {})
  })
const fromEither = <A>(e: Either.Either<A, AgentRequestError>): Effect.Effect<A, AgentRequestError> =>
  Either.match(e, { onLeft: (l) => Effect.fail(l), onRight: (r) => Effect.succeed(r) })

/** The body was read (within its limits) before dispatch; an absent body parses as JSON `null`. */
const jsonBody = <A, I>(text: string | undefined, schema: Schema.Schema<A, I>) =>
  Effect.try({
    try: (): unknown => (text === undefined || text === "" ? null : JSON.parse(text)),
    catch: (e) => badRequest(`Json deserialize error: ${e instanceof Error ? e.message : "invalid JSON"}`)
  }).pipe(
    Effect.flatMap((body) =>
      Schema.decodeUnknown(schema)(body).pipe(
        Effect.mapError((e) => badRequest(`Json deserialize error: ${describeParseError(e)}`))
      )
    )
  )

export const makeAgentApp = (options: AgentHttpOptions = {}) =>
  Effect.gen(function*() {
    const versions = options.versions ?? AGENT_API_VERSIONS
    const latest = versions[versions.length - 1] ?? "2.6"
    const keys = yield* BootstrapKeys
    const quotes = yield* Quotes
    const id = yield* AgentIdentity
    const rootHint = `Not Implemented: Use ${versions.map((v) => `/v${v}`).join(", ")} or /version interfaces`

    const scoped = (
      method: string,
      version: ApiVersion,
      segments: ReadonlyArray<string>,
      query: Query,
      body: string | undefined
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, AgentRequestError> => {
      const [scope, leaf, ...more] = segments
      const exact = more.length === 0
      switch (scope) {
        case "agent":
          if (method === "GET" && leaf === "info" && exact && (version.major > 2 || version.minor >= 2)) {
            return okInfo({
              agent_uuid: id.agentId,
              tpm_hash_alg: id.hashAlg,
              tpm_enc_alg: quotes.encAlgFor(version),
              tpm_sign_alg: id.signAlg,
              ak_handle: 0
            })
          }
          return method === "GET"
            ? Effect.fail(badRequest("URI not supported, only /info is supported for GET in /agent interface"))
            : Effect.succeed(methodNotAllowed("Method is not supported in /agent interface"))
        case "keys":
          if (method === "GET" && leaf === "pubkey" && exact) return okPubkey({ pubkey: keys.nk.publicPem })
          if (method === "GET" && leaf === "verify" && exact) {
            return fromEither(parseChallenge(query)).pipe(
              Effect.flatMap(keys.verify),
              Effect.flatMap((hmac) => okVerify({ hmac }))
            )
          }
          if (method === "POST" && leaf === "ukey" && exact) {
            return jsonBody(body, UKeyRequest).pipe(Effect.flatMap(keys.ukey), Effect.zipRight(okEmpty({})))
          }
          if (method === "POST" && leaf === "vkey" && exact) {
            return jsonBody(body, VKeyRequest).pipe(Effect.flatMap(keys.vkey), Effect.zipRight(okEmpty({})))
          }
          return method === "GET"
            ? Effect.fail(badRequest("URI not supported, only /pubkey and /verify are supported for GET in /keys interface"))
            : method === "POST"
            ? Effect.fail(badRequest("URI not supported, only /ukey and /vkey are supported for POST in /keys interface"))
            : Effect.succeed(methodNotAllowed("Method is not supported in /keys interface"))
        case "quotes":
          if (method === "GET" && leaf === "identity" && exact) {
            return fromEither(parseIdentityQuery(query)).pipe(
              Effect.flatMap((nonce) => quotes.identity(nonce, version)),
              Effect.flatMap(okIdentity)
            )
          }
          if (method === "GET" && leaf === "integrity" && exact) {
            return fromEither(parseIntegrityQuery(query)).pipe(
              Effect.flatMap((q) => quotes.integrity(q, version)),
              Effect.flatMap(okIntegrity)
            )
          }
          return method === "GET"
            ? Effect.fail(badRequest("URI not supported, only /identity and /integrity are supported for GET in /quotes/ interface"))
            : Effect.succeed(methodNotAllowed("Method is not supported in /quotes/ interface"))
        case "notifications":
          if (method === "POST" && leaf === "revocation" && exact) {
            return jsonBody(body, RevocationNotice).pipe(
              Effect.flatMap((body) => Effect.flatMap(revocationCertOf(options), (cert) => fromEither(checkRevocation(body, cert)))),
              Effect.tapError((e) => Effect.logWarning(`revocation notification refused: ${e.message}`)),
              Effect.tap(({ event, signed }) =>
                Effect.logWarning(
                  `received a revocation notice: agent ${event.agent_id ?? "?"} failed attestation (${event.event_id ?? "?"}, severity ${event.severity_label ?? "?"}; ` +
                    `${signed ? "signature verified" : "unchecked: no revocation certificate configured"})`
                )
              ),
              Effect.zipRight(okEmpty({}))
            )
          }
          return method === "POST"
            ? Effect.fail(badRequest("URI not supported, only /revocation is supported for POST in /notifications/ interface"))
            : Effect.succeed(methodNotAllowed("Method is not supported in /notifications/ interface"))
        default:
          if (segments.length === 0 || scope === "") {
            if (method === "GET") return Effect.fail(badRequest("Not Implemented: Use /agent, /keys, or /quotes interfaces"))
            if (method === "POST") return Effect.fail(badRequest("Not Implemented: Use /keys or /notifications interfaces"))
          }
          return Effect.succeed(envelopeResponse(404, "Not Found"))
      }
    }

    const limits = { maxBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, maxDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH }
    const app: HttpApp.Default = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      // read once, bounded in bytes and JSON depth, before any route looks at it (as the registrar)
      let body: string | undefined
      if (hasBody(request)) {
        const read = yield* Effect.either(readBoundedBody(request, limits))
        if (Either.isLeft(read)) return bodyRefusedResponse(read.left)
        body = read.right
      }
      const url = requestTargetUrl(request.url)
      if (url === undefined) return envelopeResponse(400, "Bad Request: the request target is not a path")
      const method = request.method
      const path = url.pathname
      const query: Record<string, string> = {}
      url.searchParams.forEach((v, k) => (query[k] = v))
      if (path === "/version" || path === "/version/") {
        return method === "GET"
          ? yield* okVersion({ supported_version: latest, supported_versions: versions })
          : methodNotAllowed("Method is not supported", "GET")
      }
      const m = /^\/v([^/]*)(?:\/(.*))?$/.exec(path)
      if (m === null) {
        if (path !== "/" && path !== "") return envelopeResponse(404, "Not Found")
        return method === "GET" || method === "POST"
          ? envelopeResponse(400, rootHint)
          : methodNotAllowed("Method is not supported", "GET, POST")
      }
      const requested = m[1] ?? ""
      const version = versions.includes(requested) ? parseVersion(requested) : undefined
      if (version === undefined) return envelopeResponse(400, `API version not supported: v${requested}`)
      const rest = (m[2] ?? "").replace(/\/+$/, "")
      const segments = rest === "" ? [] : rest.split("/")
      return yield* scoped(method, version, segments, query, body).pipe(
        Effect.catchAll((e) => Effect.succeed(fail(e)))
      )
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logError("agent request failed", cause), envelopeResponse(500, "Internal Server Error"))
      )
    )
    return app
  })

export { AgentRequestError }
