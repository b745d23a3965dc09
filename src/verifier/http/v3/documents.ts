/**
 * Reading an API 3.0 request body: the media type (415 unless `application/vnd.api+json`), JSON,
 * the JSON:API document shape (400 `invalid_request` naming the member), the resource type, then
 * the Schema of schemas/Push.ts (422 `invalid_resource_data`, one error per refused field with its
 * `source.pointer`, as Keylime's model validation answers). Pure.
 */
import { Either, ParseResult, Schema } from "effect"
import { JSON_API_MEDIA_TYPE, type JsonApiError, mediaTypeOf } from "../../../http/jsonapi.js"

export type DocumentRefusal =
  | { readonly _tag: "UnsupportedMediaType"; readonly received: string }
  | { readonly _tag: "Invalid"; readonly status: 400 | 422; readonly errors: ReadonlyArray<JsonApiError> }

export const TOP_LEVEL = new Set(["data", "errors", "meta", "links", "jsonapi"])

const invalidRequest = (detail: string, pointer?: string): DocumentRefusal => ({
  _tag: "Invalid",
  status: 400,
  errors: [{ status: "400", code: "invalid_request", detail, ...(pointer === undefined ? {} : { source: { pointer } }) }]
})

export const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** `/data/attributes/evidence_supported/0/capabilities` for a Schema issue path. */
export const pointerOf = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "" : "/" + path.map((p) => String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("/")

/** Keylime's detail form: `Attribute '<name>' <message>.` */
const detailOf = (issue: ParseResult.ArrayFormatterIssue): string => {
  const name = issue.path.length === 0 ? "data" : String(issue.path[issue.path.length - 1])
  const message = issue._tag === "Missing" ? "is required" : issue.message
  return `Attribute '${name}' ${message.replace(/\.$/, "")}.`
}

/** Schema issues as 422 errors (at most 10, one per pointer). */
export const resourceErrors = (error: ParseResult.ParseError): ReadonlyArray<JsonApiError> => {
  const seen = new Set<string>()
  const out: Array<JsonApiError> = []
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  // a union (evidence items by type) reports every member's complaint: where one goes deeper into
  // the same item, the shallow ones (the other members' type tags) are noise
  const parentOf = (path: ReadonlyArray<PropertyKey>) => pointerOf(path.slice(0, -1))
  const deeper = (i: ParseResult.ArrayFormatterIssue) =>
    issues.some((o) => o.path.length > i.path.length && pointerOf(o.path).startsWith(parentOf(i.path) + "/"))
  for (const issue of issues.filter((i) => i.path.length === 0 || i._tag === "Missing" || !deeper(i))) {
    const pointer = pointerOf(issue.path)
    if (seen.has(pointer)) continue
    seen.add(pointer)
    out.push({ status: "422", code: "invalid_resource_data", detail: detailOf(issue), source: { pointer } })
    if (out.length === 10) break
  }
  return out
}

/** One field refused by the domain, in the same form. */
export const resourceError = (pointer: string, reason: string): JsonApiError => {
  const name = pointer.split("/").filter((s) => s !== "").pop() ?? "data"
  return { status: "422", code: "invalid_resource_data", detail: `Attribute '${name}' ${reason.replace(/\.$/, "")}.`, source: { pointer } }
}

export const readDocument = <A, I>(
  schema: Schema.Schema<A, I, never>,
  resourceType: string,
  contentType: string | undefined,
  text: string
): Either.Either<A, DocumentRefusal> => {
  const media = mediaTypeOf(contentType)
  if (media !== JSON_API_MEDIA_TYPE) return Either.left({ _tag: "UnsupportedMediaType", received: media })
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return Either.left(invalidRequest(`Request body is not JSON: ${(e as Error).message}`))
  }
  if (!isObject(json)) return Either.left(invalidRequest("Request body must be a JSON:API document (an object)", ""))
  for (const key of Object.keys(json)) {
    if (!TOP_LEVEL.has(key)) return Either.left(invalidRequest(`'${key}' is not a member a JSON:API document may have`, `/${key}`))
  }
  const data = json["data"]
  if (!isObject(data)) return Either.left(invalidRequest(`Request body must include ${resourceType} data.`, "/data"))
  if (data["type"] !== resourceType) {
    return Either.left(invalidRequest(`Request body must include ${resourceType} data ('data.type' must be '${resourceType}').`, "/data/type"))
  }
  if (!isObject(data["attributes"])) return Either.left(invalidRequest(`Request body must include ${resourceType} attributes.`, "/data/attributes"))
  return Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "ignore" })(json),
    (e): DocumentRefusal => ({ _tag: "Invalid", status: 422, errors: resourceErrors(e) })
  )
}

/**
 * readDocument for a document agents send unchanged again and again (phase 1's capabilities: the
 * same bytes every cycle of an agent): the decoded result of the last `capacity` distinct texts is
 * kept, least recently used dropped first. Only accepted documents are kept; results are never
 * mutated by their readers.
 */
export const memoizedReader = <A, I>(schema: Schema.Schema<A, I, never>, resourceType: string, capacity: number) => {
  const accepted = new Map<string, A>()
  return (contentType: string | undefined, text: string): Either.Either<A, DocumentRefusal> => {
    if (mediaTypeOf(contentType) !== JSON_API_MEDIA_TYPE) return readDocument(schema, resourceType, contentType, text)
    const known = accepted.get(text)
    if (known !== undefined) {
      accepted.delete(text)
      accepted.set(text, known)
      return Either.right(known)
    }
    const read = readDocument(schema, resourceType, contentType, text)
    if (Either.isRight(read)) {
      if (accepted.size >= capacity) accepted.delete(accepted.keys().next().value!)
      accepted.set(text, read.right)
    }
    return read
  }
}
