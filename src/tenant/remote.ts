/**
 * One request of the tenant to a server, with a timeout, its failures turned into one sentence:
 * the server's own refusal (the envelope's status text and code), a server that cannot be reached
 * (refused connection, TLS handshake, timeout), or an answer the tenant cannot read.
 */
import { HttpClientError } from "@effect/platform"
import { Duration, Effect, Schedule } from "effect"
import { TenantError } from "./errors.js"

export type Service = "registrar" | "verifier" | "agent"

const STATUS: Record<string, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  PayloadTooLarge: 413,
  InternalError: 500,
  ServiceUnavailable: 503
}

/** The envelope status code of a declared HttpApi error, or undefined. */
export const statusOf = (e: unknown): number | undefined => {
  const tag = (e as { readonly _tag?: unknown } | null)?._tag
  return typeof tag === "string" ? STATUS[tag] : undefined
}

const causeCode = (e: unknown): string | undefined => {
  let c: unknown = e
  for (let i = 0; i < 4 && c !== undefined && c !== null; i++) {
    const code = (c as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    c = (c as { readonly cause?: unknown }).cause
  }
  return undefined
}

const TLS_HINT: Record<Service, string> = {
  registrar: "check [tenant] client_cert, client_key and trusted_server_ca against the registrar's CA",
  verifier: "check [tenant] client_cert, client_key and trusted_server_ca against the verifier's CA",
  agent: "the agent's certificate must be the mtls_cert it registered, and it must trust the tenant's CA"
}

/** A transport failure as a sentence: unreachable, TLS, or the message node gave. */
export const describeTransport = (service: Service, url: string, e: unknown): string => {
  const code = causeCode(e)
  if (code === "ECONNREFUSED") return `cannot reach the ${service} at ${url}: connection refused (is it running?)`
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `cannot reach the ${service} at ${url}: unknown host`
  if (code === "ECONNRESET" || code === "EPIPE") return `the ${service} at ${url} closed the connection (${code}); ${TLS_HINT[service]}`
  if (code !== undefined && (code.startsWith("ERR_SSL") || code.startsWith("ERR_TLS") || code.includes("CERT") || code === "DEPTH_ZERO_SELF_SIGNED_CERT")) {
    return `TLS with the ${service} at ${url} failed (${code}); ${TLS_HINT[service]}`
  }
  const inner = (e as { readonly cause?: { readonly message?: unknown } }).cause?.message
  return `cannot reach the ${service} at ${url}: ${typeof inner === "string" ? inner : e instanceof Error ? e.message : String(e)}${code ? ` (${code})` : ""}`
}

/**
 * Worth asking again: the server said so (503, its database momentarily unavailable) or the
 * connection broke mid-request. A refused connection is not: the server is down, say so at once.
 */
export const isTransient = (e: unknown): boolean => {
  if (statusOf(e) === 503) return true
  if (HttpClientError.isHttpClientError(e) && e._tag === "RequestError") {
    const code = causeCode(e)
    return code === "ECONNRESET" || code === "EPIPE" || code === "ETIMEDOUT"
  }
  return false
}

export interface RemoteOptions {
  readonly service: Service
  /** The server's base address, for messages. */
  readonly url: string
  /** What was asked, e.g. "GET agent d432…": the start of every message. */
  readonly what: string
  readonly timeout: Duration.DurationInput
  /** Transient failures (isTransient) are tried again this many times, `retryInterval` apart. */
  readonly retries?: number
  readonly retryInterval?: Duration.DurationInput
}

/**
 * Runs one typed-client call, each attempt bounded by `timeout`, transient failures tried again;
 * every failure becomes a TenantError naming the service, a refusal keeping its code in `status`
 * (callers turn a 404 into "not found" etc.).
 */
export const remote = <A, E, R>(o: RemoteOptions, call: Effect.Effect<A, E, R>): Effect.Effect<A, TenantError, R> =>
  call.pipe(
    Effect.timeoutFail({
      duration: o.timeout,
      onTimeout: () => new TenantError({ service: o.service, message: `${o.what}: the ${o.service} at ${o.url} did not answer within ${Duration.format(Duration.decode(o.timeout))}` })
    }),
    Effect.retry({
      while: isTransient,
      schedule: Schedule.spaced(o.retryInterval ?? Duration.seconds(2)).pipe(Schedule.intersect(Schedule.recurs(o.retries ?? 0)))
    }),
    Effect.mapError((e: unknown): TenantError => {
      if (e instanceof TenantError) return e
      const status = statusOf(e)
      if (status !== undefined) {
        return new TenantError({ service: o.service, status, message: `${o.what}: the ${o.service} answered ${status}: ${(e as { readonly message: string }).message}` })
      }
      if (HttpClientError.isHttpClientError(e)) {
        if (e._tag === "RequestError") return new TenantError({ service: o.service, message: `${o.what}: ${describeTransport(o.service, o.url, e)}` })
        const code = e.response.status
        const reason = e.reason === "Decode" ? "an answer the tenant cannot read" : `status ${code}`
        return new TenantError({
          service: o.service,
          status: code,
          message: code === 403
            ? `${o.what}: the ${o.service} refused the tenant's client certificate (403); ${TLS_HINT[o.service]}`
            : `${o.what}: the ${o.service} answered ${reason}${e.reason === "Decode" ? ` (HTTP ${code})` : ""}`
        })
      }
      const parse = (e as { readonly _tag?: unknown })._tag === "ParseError"
      return new TenantError({
        service: o.service,
        message: `${o.what}: ${parse ? `the ${o.service}'s answer does not have the expected fields: ` : ""}${e instanceof Error ? e.message.split("\n")[0] : String(e)}`
      })
    })
  )
