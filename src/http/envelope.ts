/**
 * Everything the router cannot answer itself still answers with the envelope: schema failures,
 * malformed or oversized bodies, unknown routes, and defects (as a 500 envelope, logged).
 */
import { HttpServerError, HttpServerResponse } from "@effect/platform"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Cause, Effect, FiberRef, Option, ParseResult } from "effect"
import { StatusText } from "../../schemas/Envelope.js"
import { currentRequestPath, jsonApiPlatformError, JsonApiRefused } from "./jsonapi.js"
import { currentFamily } from "./versions.js"

export const envelopeResponse = (code: number, status: string, results: unknown = {}) =>
  HttpServerResponse.unsafeJson({ code, status, results }, { status: code })

/** The request as the client wrote it (before the version prefix was stripped), for messages. */
export const originalRequestLine: FiberRef.FiberRef<{ readonly method: string; readonly path: string }> = FiberRef
  .unsafeMake({ method: "GET", path: "/" })

/** Current body limit, so a 413 can say it. */
export const currentMaxBodyBytes: FiberRef.FiberRef<number> = FiberRef.unsafeMake(1024 * 1024)

/** One Schema issue as `ParseResult.ArrayFormatter` (and `HttpApiDecodeError.issues`) give it. */
export interface DecodeIssue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** `aik_tpm: is not valid base64; port: must be a port number 1-65535`: each field named, at most five. */
export const describeIssues = (issues: ReadonlyArray<DecodeIssue>, fallback: string): string => {
  const parts = issues.map((issue) => {
    const path = issue.path.map(String).join(".")
    const message = issue._tag === "Missing"
      ? "is required"
      : issue.path.length === 0 && issue._tag === "Type"
      ? "the request body must be a JSON object"
      : issue.message
    return path.length > 0 ? `${path}: ${message}` : message
  })
  // a nullable field's union adds "Expected null" next to the real complaint: keep the real one
  const informative = parts.filter((p) => !/: Expected null, actual /.test(p))
  const unique = [...new Set(informative.length > 0 ? informative : parts)]
  return unique.length > 0 ? unique.slice(0, 5).join("; ") : fallback
}

/** The HttpApi payload/path decode failure, fields named (the registrar's `Invalid request: …`). */
export const describeDecodeError = (error: HttpApiDecodeError): string => describeIssues(error.issues, error.message)

/** A Schema decode failure outside HttpApi (the agent's dispatcher), fields named the same way. */
export const describeParseError = (error: ParseResult.ParseError): string =>
  describeIssues(ParseResult.ArrayFormatter.formatErrorSync(error), error.message)

const decodeDefect = (cause: Cause.Cause<unknown>): Option.Option<HttpServerError.RequestError> =>
  Option.filter(
    Cause.dieOption(cause),
    (d): d is HttpServerError.RequestError =>
      HttpServerError.isServerError(d) && d._tag === "RequestError" && d.reason === "Decode"
  ) as Option.Option<HttpServerError.RequestError>

const isTooLarge = (error: HttpServerError.RequestError): boolean =>
  error.cause instanceof Error && error.cause.message === "maxBytes exceeded"

/**
 * API level (`HttpApiBuilder.middleware`): runs before HttpApi encodes declared errors, so it only
 * translates the undeclared failures (decode errors, unknown routes, unreadable bodies) and
 * re-fails everything else.
 */
export const envelopeUndeclared = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchAllCause(app, (cause) =>
    Effect.gen(function*() {
      // API 3.0 requests get the same refusals as JSON:API error documents
      const jsonApi = (yield* FiberRef.get(currentFamily)) === "v3"
      const selfPath = yield* FiberRef.get(currentRequestPath)
      const refuse = (code: number, text: string) =>
        jsonApi ? jsonApiPlatformError(code, text, selfPath) : envelopeResponse(code, text)
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        const e: unknown = failure.value
        if (e instanceof HttpApiDecodeError) {
          return refuse(400, `Invalid request: ${describeDecodeError(e)}`)
        }
        // a refusal that carries its JSON:API answer (an authorization middleware's)
        if (e instanceof JsonApiRefused) return e.response
        if (HttpServerError.isServerError(e) && e._tag === "RouteNotFound") {
          const line = yield* FiberRef.get(originalRequestLine)
          return refuse(404, StatusText.notFound(line.method, line.path))
        }
      }
      const defect = decodeDefect(cause)
      if (Option.isSome(defect)) {
        if (isTooLarge(defect.value)) {
          return refuse(413, StatusText.tooLarge(yield* FiberRef.get(currentMaxBodyBytes)))
        }
        const inner = defect.value.cause
        const detail = inner instanceof Error ? inner.message : "the body is not JSON"
        return refuse(400, StatusText.malformedJson(detail))
      }
      if (jsonApi && !Cause.isInterruptedOnly(cause)) {
        yield* Effect.logError("unhandled request failure", cause)
        return refuse(500, StatusText.internal)
      }
      return yield* Effect.failCause(cause)
    }))

/** Server level: last resort, a logged defect becomes a 500 envelope. */
export const envelopeDefects = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchAllCause(app, (cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause)
      : Effect.as(Effect.logError("unhandled request failure", cause), envelopeResponse(500, StatusText.internal)))
