/**
 * The dashboard's reads from the verifier and the registrar: GET requests over HTTPS with the
 * tenant's admin certificate on one keep-alive agent per server, each bounded by a timeout. A
 * failure is an `UpstreamError` naming the service, the path and the reason (connection refused,
 * TLS, HTTP status with the envelope's text, body that is not an envelope), which the page shows.
 */
import { Data, Duration, Effect } from "effect"
import * as https from "node:https"
import { type ClientTls, rawRequest } from "../http/client.js"
import { clientTlsPolicy } from "../http/tlsPolicy.js"

export type Service = "verifier" | "registrar"

export class UpstreamError extends Data.TaggedError("UpstreamError")<{
  readonly service: Service
  readonly path: string
  /** HTTP status when the server answered; absent for transport failures. */
  readonly status?: number
  readonly reason: string
}> {
  override get message() {
    return `${this.service} ${this.path}: ${this.reason}`
  }
}

export interface Upstream {
  readonly service: Service
  readonly baseUrl: string
  /** GET `path` and answer the envelope's `results`. */
  readonly get: (path: string) => Effect.Effect<unknown, UpstreamError>
  /** GET `path` and answer the raw body (benchmarks, version probe). */
  readonly getText: (path: string) => Effect.Effect<{ status: number; body: string }, UpstreamError>
  readonly close: () => void
}

const REQUEST_TIMEOUT = Duration.seconds(10)

export const makeUpstream = (service: Service, baseUrl: string, tls: ClientTls): Upstream => {
  const agent = new https.Agent({
    ca: tls.ca,
    ...(tls.cert === undefined ? {} : { cert: tls.cert }),
    ...(tls.key === undefined ? {} : { key: tls.key }),
    rejectUnauthorized: true,
    keepAlive: true,
    maxSockets: 8,
    ...clientTlsPolicy
  })
  const getText = (path: string) =>
    rawRequest({ method: "GET", baseUrl, path, agent, headers: { accept: "application/json" } }).pipe(
      Effect.timeoutFail({
        duration: REQUEST_TIMEOUT,
        onTimeout: () => new UpstreamError({ service, path, reason: `no answer within ${Duration.format(REQUEST_TIMEOUT)}` })
      }),
      Effect.mapError((e) =>
        e._tag === "UpstreamError"
          ? e
          : new UpstreamError({ service, path, reason: `${baseUrl} unreachable: ${e.code ?? ""}${e.code ? " " : ""}${e.message}` })
      ),
      Effect.map((r) => ({ status: r.status, body: r.body }))
    )
  const get = (path: string) =>
    Effect.flatMap(getText(path), ({ status, body }) => {
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        return Effect.fail(new UpstreamError({ service, path, status, reason: `HTTP ${status}, body is not JSON` }))
      }
      const env = json as { status?: unknown; results?: unknown }
      if (status !== 200) {
        const text = typeof env?.status === "string" ? env.status : ""
        return Effect.fail(new UpstreamError({ service, path, status, reason: `HTTP ${status}${text ? `: ${text}` : ""}` }))
      }
      if (typeof env !== "object" || env === null || !("results" in env)) {
        return Effect.fail(new UpstreamError({ service, path, status, reason: "answer is not a {code, status, results} envelope" }))
      }
      return Effect.succeed(env.results)
    })
  return { service, baseUrl, get, getText, close: () => agent.destroy() }
}
