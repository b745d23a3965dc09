/**
 * Which request bodies the v2 servers take (issue 22 §5): JSON, named `application/json`, any
 * `application/<name>+json` (Keylime's controllers read those as JSON too, e.g. a push agent's
 * `application/vnd.api+json`), or no Content-Type at all (Keylime's tenant posts `data=json.dumps(…)`
 * without one). Anything else is refused with 415 before a decoder sees it:
 *
 *   bodyMediaRefusal(request.method, request.headers["content-type"])   // undefined = read as JSON
 */
import { mediaTypeOf } from "./jsonapi.js"

/** Methods whose body is the request's payload; a body on GET or DELETE is read and ignored. */
export const PAYLOAD_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH"])

const STRUCTURED_JSON = /^application\/[a-z0-9!#$&^_.-]+\+json$/

/** True for a media type (lower case, no parameters) read as JSON; "" (none given) included. */
export const isJsonMediaType = (media: string): boolean =>
  media === "" || media === "application/json" || STRUCTURED_JSON.test(media)

/** The media type refused (415) for a request with a payload, or undefined when it is read as JSON. */
export const bodyMediaRefusal = (method: string, contentType: string | undefined): string | undefined => {
  if (!PAYLOAD_METHODS.has(method.toUpperCase())) return undefined
  const media = mediaTypeOf(contentType)
  return isJsonMediaType(media) ? undefined : media
}
