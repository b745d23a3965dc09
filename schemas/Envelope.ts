/**
 * The response envelope every attest endpoint answers with: `{code, status, results}` (spec §2.1,
 * Keylime's `echo_json_response`). Successes and the declared errors get an encoded form that IS the
 * envelope, so HttpApi handlers return and fail with domain values and `HttpApiClient` decodes the
 * envelope back into them.
 */
import { HttpApiSchema } from "@effect/platform"
import { Option, Schema, SchemaAST } from "effect"

/** The envelope with any results: what a client or test reads before it knows the endpoint. */
export const EnvelopeBody = Schema.Struct({
  code: Schema.Int,
  status: Schema.String,
  results: Schema.Unknown
}).annotations({ identifier: "EnvelopeBody" })
export type EnvelopeBody = typeof EnvelopeBody.Type

export const envelope = (code: number, status: string, results: unknown = {}): EnvelopeBody => ({
  code,
  status,
  results
})

/** Success envelope around `results`, status text "Success" (spec §7.1). */
export const Envelope = <A, I, R>(results: Schema.Schema<A, I, R>, code = 200, status = "Success") =>
  Schema.transform(
    Schema.Struct({ code: Schema.Number, status: Schema.String, results }),
    Schema.typeSchema(results),
    { strict: true, decode: (env) => env.results, encode: (a) => ({ code, status, results: a }) }
  ).annotations({
    // its own identifier: inheriting the inner one makes OpenAPI reference itself
    identifier: `${
      Option.getOrElse(SchemaAST.getIdentifierAnnotation(Schema.typeSchema(results).ast), () => "Anonymous")
    }Envelope${code}`,
    ...HttpApiSchema.annotations({ status: code })
  })

/** An empty `results` object. */
export const Empty = Schema.Struct({}).annotations({ identifier: "Empty" })

const ErrorEnvelope = Schema.Struct({ code: Schema.Number, status: Schema.String, results: Schema.Unknown })

const enveloped = <Self extends { readonly message: string }>(
  cls: Schema.Schema<Self, any, never>,
  make: (message: string) => Self,
  code: number
) =>
  Schema.transform(ErrorEnvelope, Schema.typeSchema(cls), {
    strict: true,
    decode: (e) => make(e.status),
    encode: (err) => ({ code, status: err.message, results: {} })
  }).annotations({ identifier: `Error${code}Envelope`, ...HttpApiSchema.annotations({ status: code }) })

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { message: Schema.String }) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", { message: Schema.String }) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { message: Schema.String }) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { message: Schema.String }) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { message: Schema.String }) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: Schema.String
}) {}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {}
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String
}) {}

export const BadRequestE = enveloped(BadRequest, (message) => new BadRequest({ message }), 400)
export const UnauthorizedE = enveloped(Unauthorized, (message) => new Unauthorized({ message }), 401)
export const ForbiddenE = enveloped(Forbidden, (message) => new Forbidden({ message }), 403)
export const NotFoundE = enveloped(NotFound, (message) => new NotFound({ message }), 404)
export const ConflictE = enveloped(Conflict, (message) => new Conflict({ message }), 409)
export const PayloadTooLargeE = enveloped(PayloadTooLarge, (message) => new PayloadTooLarge({ message }), 413)
export const InternalErrorE = enveloped(InternalError, (message) => new InternalError({ message }), 500)
export const ServiceUnavailableE = enveloped(
  ServiceUnavailable,
  (message) => new ServiceUnavailable({ message }),
  503
)

/** Status texts used by the platform itself (unknown routes, versions, bodies). */
export const StatusText = {
  success: "Success",
  notFound: (method: string, path: string) => `Not Found: no route for ${method} ${path}`,
  methodNotAllowed: (method: string, path: string, allowed: ReadonlyArray<string>) =>
    `Method Not Allowed: ${method} is not served on ${path} (allowed: ${allowed.join(", ")})`,
  unsupportedVersion: (version: string, supported: ReadonlyArray<string>) =>
    `API version ${version} is not supported (supported: ${supported.join(", ")})`,
  malformedJson: (detail: string) => `Malformed JSON body: ${detail}`,
  tooLarge: (limit: number) => `Request body exceeds the limit of ${limit} bytes`,
  tooDeep: (limit: number) => `Malformed JSON body: nested deeper than ${limit} levels`,
  unsupportedMediaType: (media: string) => `Unsupported Media Type: the request body must be JSON (application/json), not ${media}`,
  badRequestLine: (code: string) => `Bad Request: the request line or headers cannot be parsed (${code})`,
  headersTooLarge: "Request Header Fields Too Large",
  requestTimeout: "Request Timeout",
  internal: "Internal Server Error"
} as const

/**
 * A success without results whose status is the outcome (the verifier's DELETE: 200 deleted now,
 * 202 accepted for later): the handler returns `tag`, a client decodes the status back to it.
 */
export const OutcomeEnvelope = <const T extends string>(tag: T, code: number, status: string) =>
  Schema.transform(
    Schema.Struct({ code: Schema.Number, status: Schema.String, results: Schema.Struct({}) }),
    Schema.Literal(tag),
    { strict: true, decode: () => tag, encode: () => ({ code, status, results: {} }) }
  ).annotations({ identifier: `${tag[0]!.toUpperCase()}${tag.slice(1)}Envelope${code}`, ...HttpApiSchema.annotations({ status: code }) })

/** A 400 whose `results` say more than the status (verify/evidence: the failures of the input). */
export class BadRequestWithResults extends Schema.TaggedError<BadRequestWithResults>()("BadRequestWithResults", {
  message: Schema.String,
  results: Schema.Unknown
}) {}

export const BadRequestWithResultsE = Schema.transform(ErrorEnvelope, Schema.typeSchema(BadRequestWithResults), {
  strict: true,
  decode: (e) => new BadRequestWithResults({ message: e.status, results: e.results }),
  encode: (err) => ({ code: 400, status: err.message, results: err.results })
}).annotations({ identifier: "Error400ResultsEnvelope", ...HttpApiSchema.annotations({ status: 400 }) })
