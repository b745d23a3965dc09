/**
 * OpenAPI 3.1 documents of attest's servers, generated from their `HttpApi` (`OpenApi.fromApi`)
 * and corrected to say what the request platform (src/http/platform.ts) really serves:
 *
 *   - versioned routes are `/v{api_version}/…` (the platform strips the prefix before routing);
 *     the paths listed as unversioned (`/version`, `/openapi.json`) have none; API 3.0's routes
 *     (router prefix `/v3`) are `/v3.0/…` in JSON:API (`application/vnd.api+json`, JSON:API errors);
 *   - every answer is the `{code, status, results}` envelope: a request that does not match its
 *     schema is a 400 envelope whose status names the field (not HttpApi's `HttpApiDecodeError`),
 *     an unknown version a 404 envelope, a body over the limit a 413 envelope, and a 503 carries
 *     `Retry-After`; envelope codes are constants and error `results` are empty.
 *
 *   openApiDocument(RegistrarApi, { title, description, versions: V2_VERSIONS, unversioned: ["/version"] })
 *
 * src/cli/apiDocuments.ts lists each server's document (scripts/openapi.ts writes them to
 * docs/openapi/<name>.json and checks them in CI); `serveOpenApi(document)` adds `GET /openapi.json`
 * to a server's router.
 */
import { type HttpApi, HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { V3_ROUTE_PREFIX, type VersionSet } from "./versions.js"

export interface ApiDocumentOptions {
  readonly title: string
  readonly description: string
  readonly versions: VersionSet
  /** Paths the platform serves without the version prefix (its `unversioned` option). */
  readonly unversioned: ReadonlyArray<string>
  /** More HttpApis answered on the same listeners (the agent's unversioned `/version`). */
  readonly also?: ReadonlyArray<HttpApi.HttpApi.Any>
  /** The server answers `GET /openapi.json` with this document. */
  readonly servesDocument?: boolean
  /** The status of an unsupported version prefix: 404 (registrar, verifier) or 400 (the agent, as rust-keylime). */
  readonly unsupportedVersionStatus?: 400 | 404
  /** Paths served outside the HttpApi (a router route such as the verifier's JWKS), as OpenAPI path items. */
  readonly extraPaths?: JsonObject
}

/** A JSON document (what OpenApi.fromApi returns, loosened for the corrections). */
export type JsonObject = { [key: string]: unknown }

const VERSION_PARAMETER = "api_version"
const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"])

const errorEnvelopeSchema = (code: number): JsonObject => ({
  type: "object",
  description: `Error envelope: status is the reason, naming the field or the agent where there is one`,
  required: ["code", "status", "results"],
  properties: {
    code: { type: "integer", const: code },
    status: { type: "string" },
    results: { type: "object", additionalProperties: false }
  },
  additionalProperties: false
})

const errorResponse = (code: number, description: string): JsonObject => ({
  description,
  content: { "application/json": { schema: { $ref: `#/components/schemas/Error${code}Envelope` } } }
})

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v)

const JSON_API = "application/vnd.api+json"
const JSON_API_ERRORS = "JsonApiErrorDocument"
const jsonApiErrorSchema: JsonObject = {
  type: "object",
  description: "JSON:API errors: `code` (Keylime's api code) or `title` (the auth layer's and the platform's), `source.pointer` naming a refused field",
  required: ["errors"],
  properties: {
    errors: {
      type: "array",
      items: {
        type: "object",
        required: ["status", "detail"],
        properties: {
          status: { type: "string" },
          code: { type: "string" },
          title: { type: "string" },
          detail: { type: "string" },
          source: { type: "object", required: ["pointer"], properties: { pointer: { type: "string" } } }
        }
      }
    },
    links: { type: "object", properties: { self: { type: "string" } } },
    jsonapi: { type: "object", properties: { version: { type: "string" } } }
  }
}

/** An API 3.0 operation: JSON:API bodies, and answers as the handlers choose them (statuses in the summary). */
const asJsonApi = (op: JsonObject): void => {
  const body = op["requestBody"]
  if (isObject(body) && isObject(body["content"])) {
    const content = body["content"]
    const schema = (content["application/json"] as JsonObject | undefined) ?? Object.values(content)[0]
    body["content"] = { [JSON_API]: schema }
  }
  const errors = (description: string): JsonObject => ({ description, content: { [JSON_API]: { schema: { $ref: `#/components/schemas/${JSON_API_ERRORS}` } } } })
  op["responses"] = {
    "2XX": { description: "A JSON:API document, or no body (204)", content: { [JSON_API]: { schema: { type: "object" } } } },
    "4XX": errors("Refused: 400/415 a body that is no JSON:API document of the type, 422 a field (source.pointer), 401/403 authentication and authorization, 404, 409"),
    "5XX": errors("503 when the database is momentarily unavailable (Retry-After)")
  }
}

/** HttpApi's own decode-error schemas, which the platform never serves, are dropped once unreferenced. */
const DECODE_ERROR_SCHEMAS = ["HttpApiDecodeError", "Issue", "PropertyKey"]

const dropUnreferenced = (doc: JsonObject, schemas: JsonObject): void => {
  let removed = true
  while (removed) {
    removed = false
    for (const name of DECODE_ERROR_SCHEMAS) {
      if (schemas[name] === undefined) continue
      const { [name]: _self, ...others } = schemas
      const elsewhere = JSON.stringify({ ...doc, components: { ...(doc["components"] as JsonObject), schemas: others } })
      if (!elsewhere.includes(`"#/components/schemas/${name}"`)) {
        delete schemas[name]
        removed = true
      }
    }
  }
}

/** Success envelopes: `code` and `status` are the constants the platform writes. */
const tightenEnvelopes = (schemas: JsonObject): void => {
  for (const [name, schema] of Object.entries(schemas)) {
    if (!isObject(schema) || !isObject(schema["properties"])) continue
    const props = schema["properties"]
    const success = /Envelope(\d{3})$/.exec(name)
    const error = /^Error(\d{3})Envelope$/.exec(name)
    if (error) schemas[name] = errorEnvelopeSchema(Number(error[1]))
    else if (success) {
      props["code"] = { type: "integer", const: Number(success[1]) }
      props["status"] = { type: "string", const: "Success" }
    }
  }
}

/** The OpenAPI 3.1 document of a server, as its platform serves it. */
export const openApiDocument = (api: HttpApi.HttpApi.Any, options: ApiDocumentOptions): JsonObject => {
  // fromApi caches per api object and the corrections below edit in place: work on a copy
  const base = structuredClone(OpenApi.fromApi(api as HttpApi.HttpApi.AnyWithProps)) as unknown as JsonObject
  const extra = (options.also ?? []).map((a) => structuredClone(OpenApi.fromApi(a as HttpApi.HttpApi.AnyWithProps)) as unknown as JsonObject)
  const components = base["components"] as { schemas: JsonObject; securitySchemes: JsonObject }
  const schemas = components.schemas
  const sourcePaths: JsonObject = { ...(base["paths"] as JsonObject) }
  const tags = [...(base["tags"] as Array<JsonObject>)]
  for (const doc of extra) {
    Object.assign(sourcePaths, doc["paths"] as JsonObject)
    Object.assign(schemas, (doc["components"] as { schemas: JsonObject }).schemas)
    for (const tag of doc["tags"] as Array<JsonObject>) if (!tags.some((t) => t["name"] === tag["name"])) tags.push(tag)
  }

  const unversioned = new Set(options.unversioned)
  const paths: JsonObject = {}
  for (const [path, item] of Object.entries(sourcePaths)) {
    // API 3.0's routes (the router's `/v3` prefix): JSON:API, served under /v3 and /v3.0
    if (path === V3_ROUTE_PREFIX || path.startsWith(`${V3_ROUTE_PREFIX}/`)) {
      for (const [method, op] of Object.entries(item as JsonObject)) if (HTTP_METHODS.has(method) && isObject(op)) asJsonApi(op)
      schemas[JSON_API_ERRORS] = jsonApiErrorSchema
      paths[`/v3.0${path.slice(V3_ROUTE_PREFIX.length) || "/"}`] = item
      continue
    }
    const versioned = !unversioned.has(path)
    for (const [method, op] of Object.entries(item as JsonObject)) {
      if (!HTTP_METHODS.has(method) || !isObject(op)) continue
      const responses = op["responses"] as JsonObject
      const ok = responses["200"]
      if (isObject(ok) && typeof ok["description"] === "string" && /Envelope200$/.test(ok["description"])) ok["description"] = "Success: the envelope's results"
      const badVersion = versioned && options.unsupportedVersionStatus === 400 ? ", or an unsupported API version" : ""
      // verify/evidence's input errors also carry results (the failures): keep that envelope beside the plain one
      const withResults = JSON.stringify(responses["400"] ?? {}).includes("Error400ResultsEnvelope")
      responses["400"] = errorResponse(
        400,
        `Bad request: a parameter or the body does not match its schema (the status names the field and the reason), malformed JSON, or a refusal${badVersion}`
      )
      if (withResults) {
        responses["400"] = {
          ...(responses["400"] as JsonObject),
          content: {
            "application/json": {
              schema: { anyOf: [{ $ref: "#/components/schemas/Error400Envelope" }, { $ref: "#/components/schemas/Error400ResultsEnvelope" }] }
            }
          }
        }
      }
      if (responses["401"] !== undefined) responses["401"] = errorResponse(401, "Unauthorized: a signed runtime policy whose signature cannot be verified")
      if (responses["409"] !== undefined) responses["409"] = errorResponse(409, "Conflict: the name is taken, or the resource is in use (the status names the agent)")
      if (responses["403"] !== undefined) responses["403"] = errorResponse(403, "Forbidden: the caller may not do this (e.g. an admin operation without an admin certificate)")
      responses["404"] = errorResponse(404, versioned && options.unsupportedVersionStatus !== 400 ? "Not found, or an unsupported API version" : "Not found")
      if (op["requestBody"] !== undefined) responses["413"] = errorResponse(413, "The request body exceeds the server's limit")
      if (responses["500"] !== undefined) responses["500"] = errorResponse(500, "Internal error")
      if (responses["503"] !== undefined) {
        responses["503"] = {
          ...errorResponse(503, "The database is momentarily unavailable; retry after Retry-After seconds"),
          headers: { "Retry-After": { description: "seconds to wait before retrying", schema: { type: "integer" } } }
        }
      }
      if (versioned) {
        op["parameters"] = [
          {
            name: VERSION_PARAMETER,
            in: "path",
            required: true,
            description: `API version (major.minor); /v${options.versions.current.split(".")[0]}/ is the newest of that major`,
            schema: { type: "string", enum: [...options.versions.supported] }
          },
          ...(op["parameters"] as Array<unknown>)
        ]
      }
    }
    paths[versioned ? `/v{${VERSION_PARAMETER}}${path}` : path] = item
  }
  const used = JSON.stringify(paths)
  for (const code of [400, 401, 403, 404, 409, 413, 500, 503]) {
    if (used.includes(`"#/components/schemas/Error${code}Envelope"`)) schemas[`Error${code}Envelope`] = errorEnvelopeSchema(code)
    else delete schemas[`Error${code}Envelope`]
  }
  if (options.servesDocument === true) {
    paths["/openapi.json"] = {
      get: {
        tags: ["openapi"],
        operationId: "openapi",
        summary: "This document (public)",
        parameters: [],
        security: [],
        responses: { "200": { description: "The server's OpenAPI 3.1 document", content: { "application/json": { schema: { type: "object" } } } } }
      }
    }
    tags.push({ name: "openapi" })
  }
  for (const [path, item] of Object.entries(options.extraPaths ?? {})) {
    paths[path] = item
    for (const op of Object.values(item as JsonObject)) {
      for (const tag of (isObject(op) ? (op["tags"] as Array<string> | undefined) : undefined) ?? []) {
        if (!tags.some((t) => t["name"] === tag)) tags.push({ name: tag })
      }
    }
  }
  tightenEnvelopes(schemas)
  const doc: JsonObject = {
    openapi: base["openapi"],
    info: { title: options.title, version: options.versions.current, description: options.description },
    paths,
    components,
    security: base["security"],
    tags
  }
  dropUnreferenced(doc, schemas)
  return doc
}

/** `GET /openapi.json` on a server's router (public and unversioned: list it in the platform's `unversioned`). */
export const serveOpenApi = (document: () => JsonObject) =>
  HttpApiBuilder.Router.use((router) => router.get("/openapi.json", Effect.sync(() => HttpServerResponse.unsafeJson(document()))))
