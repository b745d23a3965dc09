/**
 * Request bodies, read once with bounds before anything decodes them (issue 8): at most
 * `maxBytes` (declared or chunked), and JSON nested at most `maxDepth` levels, checked on the
 * text before `JSON.parse` and Schema decoding recurse over it. A refused body gets its answer
 * while the rest of an over-long chunked body is drained (up to a bound), so the client reads a
 * 413 envelope instead of a reset connection. Registrar, agent and verifier share this module:
 *
 *   const text = yield* readBoundedBody(request, { maxBytes, maxDepth })   // BodyRefused on failure
 *   return bodyRefusedResponse(refusal)                                     // the envelope for it
 */
import { type HttpServerRequest, Multipart } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Data, Effect, Either, Stream } from "effect"
import type * as http from "node:http"
import { StatusText } from "../../schemas/Envelope.js"
import { envelopeResponse } from "./envelope.js"

/** Deep enough for every attest and Keylime document (policies nest < 10), far from the stack's limit. */
export const DEFAULT_MAX_JSON_DEPTH = 64

/** After an over-long body was refused, this many times the limit is drained before the connection is cut. */
const DRAIN_FACTOR = 16

export class BodyRefused extends Data.TaggedError("BodyRefused")<{
  readonly reason: "too-large" | "too-deep" | "unreadable"
  /** The byte or depth limit that was passed. */
  readonly limit: number
  readonly message: string
}> {}

export interface BodyLimits {
  readonly maxBytes: number
  readonly maxDepth: number
}

/**
 * True when arrays/objects in `text` nest deeper than `limit` (brackets inside strings do not
 * count). A linear scan with no recursion and no allocation, stopping at the first excess; a string
 * is skipped with a native search for its closing quote (a runtime-policy upload is one 15 MB
 * base64 string, which a loop over its characters took ~0.1 s to cross).
 */
export const jsonDepthExceeds = (text: string, limit: number): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const end = closingQuote(text, i)
      // unterminated: nothing after it counts (JSON.parse refuses the text anyway)
      if (end < 0) return false
      i = end
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

/** The quote that closes the string opened at `open`: the first one after an even run of backslashes; -1 if none. */
const closingQuote = (text: string, open: number): number => {
  for (let from = open + 1; ;) {
    const q = text.indexOf("\"", from)
    if (q < 0) return -1
    let backslashes = 0
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++
    if ((backslashes & 1) === 0) return q
    from = q + 1
  }
}

/** Whether the request carries a body at all (a declared length > 0, or chunked). */
export const hasBody = (request: { readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>> }): boolean => {
  const length = request.headers["content-length"]
  return (length !== undefined && length !== "0") || request.headers["transfer-encoding"] !== undefined
}

const tooLarge = (limit: number) =>
  new BodyRefused({ reason: "too-large", limit, message: StatusText.tooLarge(limit) })

/**
 * The body's bytes, at most `maxBytes`, given to `done` once. Past the limit the text is
 * dropped, the refusal given at once, and the rest of the body read and discarded (up to
 * DRAIN_FACTOR × the limit, then the connection is closed) so the answer reaches a client that is
 * still sending. A callback, so a route answered from node's request reads its body before any
 * fiber starts (src/verifier/http/v3/directRoutes.ts); readBodyText is the effect.
 */
export const collectBody = (incoming: http.IncomingMessage, maxBytes: number, done: (read: Either.Either<Buffer, BodyRefused>) => void): void => {
  const declared = Number(incoming.headers["content-length"] ?? Number.NaN)
  if (declared > maxBytes) {
    // node discards a declared body it was not asked to read once the answer is written
    done(Either.left(tooLarge(maxBytes)))
    return
  }
  const chunks: Array<Buffer> = []
  let bytes = 0
  let refused = false
  const onData = (chunk: Buffer) => {
    bytes += chunk.length
    if (refused) {
      if (bytes > maxBytes * DRAIN_FACTOR) incoming.socket.destroy()
      return
    }
    if (bytes > maxBytes) {
      refused = true
      chunks.length = 0
      done(Either.left(tooLarge(maxBytes)))
      return
    }
    chunks.push(chunk)
  }
  const onEnd = () => {
    cleanup()
    if (!refused) done(Either.right(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes)))
  }
  const onError = (e: Error) => {
    cleanup()
    if (!refused) done(Either.left(new BodyRefused({ reason: "unreadable", limit: maxBytes, message: e.message })))
  }
  const cleanup = () => {
    incoming.off("data", onData)
    incoming.off("end", onEnd)
    incoming.off("error", onError)
    incoming.off("aborted", onAborted)
  }
  const onAborted = () => onError(new Error("the client aborted the request"))
  incoming.on("data", onData)
  incoming.once("end", onEnd)
  incoming.once("error", onError)
  incoming.once("aborted", onAborted)
}

/** collectBody as UTF-8 text. */
export const collectBodyText = (incoming: http.IncomingMessage, maxBytes: number, done: (read: Either.Either<string, BodyRefused>) => void): void =>
  collectBody(incoming, maxBytes, (read) => done(Either.map(read, (b) => b.toString("utf8"))))

/** collectBody as an effect: the bytes, undecoded. */
export const readBodyBytes = (incoming: http.IncomingMessage, maxBytes: number): Effect.Effect<Uint8Array, BodyRefused> =>
  Effect.async<Uint8Array, BodyRefused>((resume) => collectBody(incoming, maxBytes, (read) => resume(read)))

/** collectBodyText as an effect. */
export const readBodyText = (incoming: http.IncomingMessage, maxBytes: number): Effect.Effect<string, BodyRefused> =>
  Effect.async<string, BodyRefused>((resume) => collectBodyText(incoming, maxBytes, (read) => resume(read)))

/** The text within the JSON depth limit, or the refusal. */
export const withinDepth = (text: string, maxDepth: number): Either.Either<string, BodyRefused> =>
  jsonDepthExceeds(text, maxDepth) ? Either.left(new BodyRefused({ reason: "too-deep", limit: maxDepth, message: StatusText.tooDeep(maxDepth) })) : Either.right(text)

/** The body text of a request, within the byte and depth limits. */
export const readBoundedBody = (
  request: HttpServerRequest.HttpServerRequest,
  limits: BodyLimits
): Effect.Effect<string, BodyRefused> => readBoundedText(NodeHttpServerRequest.toIncomingMessage(request), limits)

/** The same from node's request. */
export const readBoundedText = (incoming: http.IncomingMessage, limits: BodyLimits): Effect.Effect<string, BodyRefused> =>
  Effect.flatMap(readBodyText(incoming, limits.maxBytes), (text) => withinDepth(text, limits.maxDepth))

/** 413 for a body over the byte limit, 400 for one nested too deep or unreadable, with its text. */
export const bodyRefusal = (e: BodyRefused): { readonly code: number; readonly text: string } =>
  e.reason === "too-large"
    ? { code: 413, text: e.message }
    : { code: 400, text: e.reason === "too-deep" ? e.message : StatusText.malformedJson(e.message) }

/** The refusal in the v2 envelope. */
export const bodyRefusedResponse = (e: BodyRefused) => {
  const r = bodyRefusal(e)
  return envelopeResponse(r.code, r.text)
}

/**
 * The same request with its body already read: every way of reading the body answers from `text`
 * instead of the consumed stream, which would never end (issue 22: the API's decoder read an
 * `application/vnd.api+json` body as bytes and waited forever). `text`, `json`, `urlParamsBody`,
 * `arrayBuffer` (its UTF-8 bytes) and `stream` answer at once; multipart fails at once (no attest
 * route takes it). Everything else (headers, socket, peer certificate) is the original request's.
 */
export const withBodyText = (request: HttpServerRequest.HttpServerRequest, text: string): HttpServerRequest.HttpServerRequest => {
  const bytes = (): Uint8Array => new TextEncoder().encode(text)
  const noMultipart = new Multipart.MultipartError({ reason: "Parse", cause: new Error("multipart bodies are not taken") })
  const value = (v: unknown) => ({ value: v, enumerable: false })
  return Object.create(request, {
    text: value(Effect.succeed(text)),
    arrayBuffer: { get: () => Effect.sync(() => bytes().buffer as ArrayBuffer), enumerable: false },
    stream: { get: () => Stream.sync(bytes), enumerable: false },
    multipart: value(Effect.fail(noMultipart)),
    multipartStream: value(Stream.fail(noMultipart))
  }) as HttpServerRequest.HttpServerRequest
}
