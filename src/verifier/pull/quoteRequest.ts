/**
 * GET quotes/integrity on one agent's undici pool, the request every pull cycle makes: the path and
 * the answer's schema come from `AgentApi`'s `integrity` endpoint (its envelope included), so the
 * wire is the one the agent serves; only the generic client pipeline (request and response
 * objects, header maps, a fiber race for the timeout) is left out. The timeout is undici's own:
 * connect, headers and body each within `request_timeout`.
 */
import * as Undici from "@effect/platform-node/Undici"
import { Effect, Either, Schema } from "effect"
import type { IntegrityQuote } from "../../../schemas/Agent.js"
import { AgentQuotes } from "../../agent/Api.js"
import type { AgentRequestErrorKind } from "../../ops/metrics.js"

export interface QuoteRequest {
  readonly nonce: string
  /** PCR mask as a number (sent as `0x…`). */
  readonly mask: number
  readonly partial: 0 | 1
  readonly imaEntry: number
}

export interface RequestProblem {
  readonly kind: AgentRequestErrorKind
  readonly status?: number | undefined
  readonly reason: string
}

export const maskHex = (mask: number): string => `0x${mask.toString(16)}`

const TLS_CODE = /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|EPROTO|HOSTNAME_MISMATCH|ERR_OSSL)/
const TIMEOUT_CODE = /^UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT$/

/** The first `code` along an error's cause chain (node and undici put the useful one inside). */
export const codeOf = (cause: unknown): string | undefined => {
  let c: unknown = cause
  for (let i = 0; i < 4 && typeof c === "object" && c !== null; i++) {
    const code = (c as { code?: unknown }).code
    if (typeof code === "string") return code
    c = (c as { cause?: unknown }).cause
  }
  return undefined
}

export const causeText = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** A request that got no answer: timeout, TLS or connection, by the error's code. */
export const networkProblem = (cause: unknown, fallback = "request failed"): RequestProblem => {
  const code = codeOf(cause)
  if (code !== undefined && TIMEOUT_CODE.test(code)) return { kind: "timeout", reason: "no answer within request_timeout" }
  const reason = `${code ?? fallback}: ${causeText(cause)}`
  return { kind: code !== undefined && TLS_CODE.test(code) ? "tls" : "connection", reason }
}

const integrity = AgentQuotes.endpoints.integrity
const decodeAnswer = Schema.decodeUnknownEither(integrity.successSchema as Schema.Schema<IntegrityQuote, unknown>, { errors: "first" })

/** The agent's refusal text: its envelope's `status` when the body is one. */
const refusalText = (status: number, text: string): string => {
  try {
    const body = JSON.parse(text) as { status?: unknown }
    if (typeof body?.status === "string" && body.status !== "") return body.status
  } catch {
    // not JSON: the status code says it
  }
  return `status ${status}`
}

/** Judges a whole answer: 200 with the endpoint's schema, or the problem. */
export const quoteAnswer = (status: number, text: string): Either.Either<IntegrityQuote, RequestProblem> => {
  if (status !== 200) return Either.left({ kind: "http_status", status, reason: refusalText(status, text) })
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return Either.left({ kind: "decode", reason: `the answer is not JSON: ${causeText(e)}` })
  }
  const decoded = decodeAnswer(json)
  return Either.isRight(decoded) ? Either.right(decoded.right) : Either.left({ kind: "decode", reason: decoded.left.message })
}

export const quotePath = (basePath: string, r: QuoteRequest): string =>
  `${basePath}${integrity.path}?nonce=${encodeURIComponent(r.nonce)}&mask=${maskHex(r.mask)}&partial=${r.partial}&ima_ml_entry=${r.imaEntry}`

/** undici's body text: UTF-8, a leading byte-order mark skipped (as `body.text()` reads it). */
const bodyText = (chunks: ReadonlyArray<Buffer>, length: number): string => {
  if (length === 0) return ""
  const b = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length)
  const start = b.length > 2 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0
  return b.toString("utf8", start)
}

/**
 * One quote request; interrupting the fiber aborts it. It goes to the pool through undici's
 * handler interface (`dispatch`), not `request()`: that one wraps every request in an async
 * resource, an AbortSignal listener and a Readable stream for the body, measured ~8 % of the
 * verifier's CPU per attestation (bench/verifier-fleet.ts profile) for a ~2 kB answer read whole.
 * The answer, its errors and their classification are those of `request()` + `body.text()`.
 */
export const requestQuote = (
  dispatcher: Undici.Dispatcher,
  origin: string,
  basePath: string,
  r: QuoteRequest,
  timeoutMs: number
): Effect.Effect<IntegrityQuote, RequestProblem> =>
  Effect.async<IntegrityQuote, RequestProblem>((resume) => {
    let abort: ((reason?: Error) => void) | undefined
    let interrupted = false
    let status = 0
    let headers = false
    const chunks: Array<Buffer> = []
    let length = 0
    const handler: Undici.Dispatcher.DispatchHandler = {
      onConnect: (abortRequest) => {
        if (interrupted) abortRequest(new Undici.errors.RequestAbortedError())
        else abort = abortRequest
      },
      onHeaders: (statusCode) => {
        // 1xx: informational, the answer follows
        if (statusCode < 200) return true
        status = statusCode
        headers = true
        return true
      },
      onData: (chunk) => {
        chunks.push(chunk)
        length += chunk.length
        return true
      },
      onComplete: () => {
        const answer = quoteAnswer(status, bodyText(chunks, length))
        resume(Either.isRight(answer) ? Effect.succeed(answer.right) : Effect.fail(answer.left))
      },
      onError: (e) => resume(Effect.fail(headers ? networkProblem(e, "reading the answer") : networkProblem(e)))
    }
    dispatcher.dispatch({ origin, path: quotePath(basePath, r), method: "GET", headersTimeout: timeoutMs, bodyTimeout: timeoutMs }, handler)
    return Effect.sync(() => {
      interrupted = true
      abort?.(new Undici.errors.RequestAbortedError())
    })
  })
