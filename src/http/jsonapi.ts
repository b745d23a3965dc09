/**
 * The API 3.0 family's wire form (push-model.md §1.1): JSON:API 1.1 documents with
 * `application/vnd.api+json`. Resources are `{type, id?, attributes, links}`; errors are
 * `{errors: [{status, code?, title?, detail, source?: {pointer}}], links, jsonapi}`. The platform
 * renders its own refusals (unknown route, oversized or malformed body, defects) in this form for
 * `/v3` requests and in the v2 envelope for `/v2.x`.
 */
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema } from "effect"

export const JSON_API_MEDIA_TYPE = "application/vnd.api+json"
export const JSON_API_VERSION = { version: "1.1" } as const

export interface JsonApiError {
  readonly status: string
  /** Keylime's api codes (`invalid_resource_data`, `not_found`, …); the auth layer uses `title` instead. */
  readonly code?: string | undefined
  readonly title?: string | undefined
  readonly detail: string
  readonly source?: { readonly pointer: string } | undefined
}

/** The request path as the client wrote it, for `links.self` of documents and errors. */
export const currentRequestPath: FiberRef.FiberRef<string> = FiberRef.unsafeMake("/")

export const jsonApiResponse = (
  status: number,
  document: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>> = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(JSON.stringify(document), { status, contentType: JSON_API_MEDIA_TYPE, headers })

/** One or more errors as a JSON:API error document; status of the response = the first error's. */
export const jsonApiErrorResponse = (
  errors: ReadonlyArray<JsonApiError>,
  selfPath: string,
  headers: Readonly<Record<string, string>> = {}
): HttpServerResponse.HttpServerResponse =>
  jsonApiResponse(Number(errors[0]?.status ?? 500), { errors, links: { self: selfPath }, jsonapi: JSON_API_VERSION }, headers)

/** The standard reason phrase, for errors that carry a `title` (auth layer, platform). */
export const reasonPhrase = (status: number): string => TITLES[status] ?? "Error"
const TITLES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable"
}

/** A platform-level refusal (no api code): `{status, title, detail}`. */
export const jsonApiPlatformError = (status: number, detail: string, selfPath: string) =>
  jsonApiErrorResponse([{ status: String(status), title: reasonPhrase(status), detail }], selfPath)

/** The media type of a request body, without parameters, lower case. */
export const mediaTypeOf = (contentType: string | undefined): string =>
  (contentType ?? "").split(";")[0]!.trim().toLowerCase()

const JsonApiErrorSchema = Schema.Struct({
  status: Schema.String,
  code: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  detail: Schema.String,
  source: Schema.optional(Schema.Struct({ pointer: Schema.String }))
})

/**
 * A JSON:API error answer as a failure, for what runs before a handler (an authorization
 * middleware): the platform answers it as it stands (envelope.ts envelopeUndeclared), with the
 * request path it was refused at.
 */
export class JsonApiRefused extends Schema.TaggedError<JsonApiRefused>()("JsonApiRefused", {
  errors: Schema.Array(JsonApiErrorSchema),
  self: Schema.String
}) {
  get response(): HttpServerResponse.HttpServerResponse {
    return jsonApiErrorResponse(this.errors, this.self)
  }
}

/** A refusal with `{status, title, detail}` (the auth layer's shape) at the current request path. */
export const jsonApiRefused = (status: number, detail: string) =>
  Effect.map(FiberRef.get(currentRequestPath), (self) => new JsonApiRefused({ errors: [{ status: String(status), title: reasonPhrase(status), detail }], self }))

const JsonApiErrorDocument = Schema.Struct({
  errors: Schema.Array(JsonApiErrorSchema),
  links: Schema.Struct({ self: Schema.String }),
  jsonapi: Schema.Struct({ version: Schema.String })
})

/**
 * JsonApiRefused as its wire document with status `status` (for OpenAPI and clients: one schema
 * per status, each encoding only refusals of its status).
 */
export const JsonApiRefusedWithStatus = (status: number) =>
  Schema.transformOrFail(JsonApiErrorDocument, Schema.typeSchema(JsonApiRefused), {
    strict: true,
    decode: (doc) => ParseResult.succeed(new JsonApiRefused({ errors: doc.errors, self: doc.links.self })),
    encode: (refused, _, ast) =>
      refused.errors[0]?.status === String(status)
        ? ParseResult.succeed({ errors: refused.errors, links: { self: refused.self }, jsonapi: JSON_API_VERSION })
        : ParseResult.fail(new ParseResult.Type(ast, refused, `not a ${status} refusal`))
  }).pipe(
    HttpApiSchema.withEncoding({ kind: "Json", contentType: JSON_API_MEDIA_TYPE }),
    (schema) => schema.annotations({ identifier: `JsonApiError${status}`, ...HttpApiSchema.annotations({ status }) })
  )
