/**
 * HTTP(S) clients for the tenant, the verifier and tests. TLS identity is per connection pool, so
 * there is one client per identity (effect-stack.md §2): `makeHttpsClient` gives an Effect
 * `HttpClient` presenting a client certificate, `rawRequest` a byte-exact exchange (for replaying
 * recorded requests, malformed bodies and undecoded paths included).
 */
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Data, Effect, Layer, type Scope } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { clientTlsPolicy } from "./tlsPolicy.js"

export interface ClientTls {
  /** Client certificate and key (PEM); leave out to connect without a client certificate. */
  readonly cert?: string
  readonly key?: string
  /** Trusted server CA (PEM). */
  readonly ca: string
  readonly servername?: string
  /**
   * false: the server's host name is not checked against its certificate (the verifier pins each
   * agent's own certificate, whose names need not include the address it is reached at).
   */
  readonly checkServerIdentity?: false
}

export class HttpTransportError extends Data.TaggedError("HttpTransportError")<{
  readonly url: string
  readonly message: string
  /** OpenSSL / socket error code, e.g. ECONNREFUSED or ERR_SSL_TLSV1_ALERT_UNKNOWN_CA. */
  readonly code?: string
}> {}

const agentOptions = (tls: ClientTls): https.AgentOptions => ({
  ca: tls.ca,
  ...(tls.cert === undefined ? {} : { cert: tls.cert }),
  ...(tls.key === undefined ? {} : { key: tls.key }),
  ...(tls.servername === undefined ? {} : { servername: tls.servername }),
  ...(tls.checkServerIdentity === false ? { checkServerIdentity: () => undefined } : {}),
  rejectUnauthorized: true,
  keepAlive: true,
  ...clientTlsPolicy
})

/** An Effect HttpClient over node:https with one TLS identity; the agent closes with the scope. */
export const makeHttpsClient = (tls: ClientTls): Effect.Effect<HttpClient.HttpClient, never, Scope.Scope> =>
  Layer.build(NodeHttpClient.layerWithoutAgent.pipe(Layer.provide(NodeHttpClient.makeAgentLayer(agentOptions(tls)))))
    .pipe(Effect.map(Context.get(HttpClient.HttpClient)))

/** The same as a layer, for code that reads `HttpClient.HttpClient` from context. */
export const HttpsClientLayer = (tls: ClientTls): Layer.Layer<HttpClient.HttpClient> =>
  NodeHttpClient.layerWithoutAgent.pipe(Layer.provide(NodeHttpClient.makeAgentLayer(agentOptions(tls))))

export interface RawResponse {
  readonly status: number
  readonly contentType: string
  readonly body: string
  /** Response headers, lower-case names (repeated ones joined with ", "). */
  readonly headers: Readonly<Record<string, string>>
}

export interface RawRequest {
  readonly method: string
  /** Base URL (`http://127.0.0.1:8890`); `path` is appended exactly as written. */
  readonly baseUrl: string
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
  readonly tls?: ClientTls
  /** A keep-alive agent to reuse (benchmarks); a fresh connection otherwise. */
  readonly agent?: http.Agent
}

/** One request, sent as written, with the whole response body read as text. */
export const rawRequest = (req: RawRequest): Effect.Effect<RawResponse, HttpTransportError> =>
  Effect.async<RawResponse, HttpTransportError>((resume, signal) => {
    const url = new URL(req.baseUrl)
    const secure = url.protocol === "https:"
    const body = req.body === undefined ? undefined : typeof req.body === "string" ? Buffer.from(req.body) : Buffer.from(req.body)
    const options: https.RequestOptions = {
      method: req.method,
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port,
      path: req.path,
      headers: { ...(body === undefined ? {} : { "content-length": String(body.length) }), ...req.headers },
      signal,
      ...(req.agent === undefined ? { agent: false } : { agent: req.agent }),
      ...(secure && req.tls !== undefined ? agentOptions(req.tls) : {})
    }
    const onError = (e: NodeJS.ErrnoException) =>
      resume(Effect.fail(new HttpTransportError({ url: req.baseUrl + req.path, message: e.message, ...(e.code ? { code: e.code } : {}) })))
    const r = (secure ? https : http).request(options, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("error", onError)
      res.on("end", () =>
        resume(Effect.succeed({
          status: res.statusCode ?? 0,
          contentType: String(res.headers["content-type"] ?? ""),
          headers: Object.fromEntries(
            Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v ?? "")])
          ),
          body: Buffer.concat(chunks).toString("utf8")
        })))
    })
    r.on("error", onError)
    r.end(body)
  })
