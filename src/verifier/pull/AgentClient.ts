/**
 * Requests from the verifier to one pull agent: the integrity quote, V on `keys/vkey`, revocation
 * notices. The quote, asked every `quote_interval` of every agent, goes straight to the agent's
 * undici pool and its answer is decoded with the endpoint's own success schema from `AgentApi`
 * (quoteRequest.ts): the generic HttpApiClient pipeline cost about a third of the verifier's CPU per
 * attestation. The rare requests (V, revocation) use `HttpApiClient.make(AgentApi)`, made at the
 * first of them (reflecting AgentApi for every agent polled was a third of an enrolment's CPU:
 * bench/agent-add.ts). Each agent gets its own HTTPS client (an undici pool)
 * trusting exactly that agent's `mtls_cert` (or `agent_ca` when configured) and presenting the
 * verifier's client certificate; it is made once per (address, certificate) and kept while the
 * agent is polled (keep-alive: one TLS handshake, not one per quote). The host name is not checked:
 * the certificate is pinned (Keylime's verifier does not check it either). Every request has
 * `request_timeout`. Failures are classified (timeout, connection, tls, http_status, decode) for
 * the loop's events and `attest_agent_request_errors_total`.
 */
import { HttpApiClient, HttpClient, HttpClientError } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Data, Duration, Effect, Exit, Layer, ParseResult, Scope } from "effect"
import * as crypto from "node:crypto"
import * as NodeTls from "node:tls"
import type { IntegrityQuote } from "../../../schemas/Agent.js"
import { causeText, networkProblem, type QuoteRequest, type RequestProblem, requestQuote } from "./quoteRequest.js"

export { maskHex, type QuoteRequest } from "./quoteRequest.js"
import { AgentApi } from "../../agent/Api.js"
import { VerifierConfig } from "../../config/services.js"
import { clientTlsPolicy } from "../../http/tlsPolicy.js"
import * as Undici from "@effect/platform-node/Undici"
import { type AgentRequestErrorKind, recordAgentRequestError } from "../../ops/metrics.js"
import type { RevocationBody } from "../../attestation/revocation.js"
import { VerifierClientTls, type VerifierClientTlsShape } from "./ClientTls.js"

/** Where an agent is and how to trust it: from its row. */
export interface AgentTarget {
  readonly agentId: string
  readonly ip: string
  readonly port: number
  /** PEM of the agent's HTTPS certificate (pinned); null only without mTLS or with agent_ca. */
  readonly mtlsCert: string | null
  /** The agent's API version (`supported_version`): the request path's `/v<version>`. */
  readonly apiVersion: string
}

export class AgentRequestFailed extends Data.TaggedError("AgentRequestFailed")<{
  readonly agentId: string
  readonly operation: "quote" | "vkey" | "revocation"
  readonly kind: AgentRequestErrorKind
  /** HTTP status of an answer that was not a success. */
  readonly status?: number | undefined
  readonly reason: string
}> {
  override get message(): string {
    return `agent ${this.agentId} ${this.operation}: ${this.kind}${this.status === undefined ? "" : ` ${this.status}`}: ${this.reason}`
  }
}

export interface AgentClientShape {
  readonly integrityQuote: (target: AgentTarget, request: QuoteRequest) => Effect.Effect<IntegrityQuote, AgentRequestFailed>
  /** POST keys/vkey with V encrypted to the agent's NK (base64). */
  readonly deliverV: (target: AgentTarget, encryptedKey: string) => Effect.Effect<void, AgentRequestFailed>
  readonly revocation: (target: AgentTarget, body: RevocationBody) => Effect.Effect<void, AgentRequestFailed>
  /** The agent is no longer polled: its connection pool is closed. */
  readonly release: (agentId: string) => Effect.Effect<void>
}

export class AgentClient extends Context.Tag("attest/verifier/AgentClient")<AgentClient, AgentClientShape>() {}

const NONCE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// the CSPRNG is asked for a pool of nonces at a time (one call per nonce was ~1.5% of a cycle)
const NONCE_LENGTH = 20
const noncePool = new Uint8Array(NONCE_LENGTH * 64)
let noncePoolAt = noncePool.length

/** A fresh 20-character nonce of letters and digits (Keylime's TPM nonce), from the CSPRNG. */
export const newNonce = (): string => {
  if (noncePoolAt + NONCE_LENGTH > noncePool.length) {
    crypto.randomFillSync(noncePool)
    noncePoolAt = 0
  }
  let out = ""
  // 256 % 62 bias is irrelevant for a freshness nonce; the alphabet is what agents accept
  for (let i = noncePoolAt; i < noncePoolAt + NONCE_LENGTH; i++) out += NONCE_ALPHABET[noncePool[i]! % NONCE_ALPHABET.length]
  // each byte is used once: the next nonce shares nothing with this one
  noncePool.fill(0, noncePoolAt, noncePoolAt + NONCE_LENGTH)
  noncePoolAt += NONCE_LENGTH
  return out
}

/** Any failure of an HttpApiClient call → its kind, status and reason. */
export const classify = (e: unknown): RequestProblem => {
  if (HttpClientError.isHttpClientError(e)) {
    if (e._tag === "RequestError") {
      return networkProblem(e.cause, e.reason)
    }
    const status = e.response.status
    if (e.reason === "StatusCode") return { kind: "http_status", status, reason: e.description ?? `status ${status}` }
    return { kind: "decode", status, reason: `${e.reason}: ${e.description ?? causeText(e.cause)}` }
  }
  if (ParseResult.isParseError(e)) return { kind: "decode", reason: e.message }
  if (typeof e === "object" && e !== null && "_tag" in e) {
    const tag = (e as { _tag: string })._tag
    const message = String((e as { message?: unknown }).message ?? "")
    if (tag === "BadRequest") return { kind: "http_status", status: 400, reason: message }
    if (tag === "NotFound") return { kind: "http_status", status: 404, reason: message }
    if (tag === "InternalError") return { kind: "http_status", status: 500, reason: message }
    if (tag === "TimeoutException") return { kind: "timeout", reason: "no answer within request_timeout" }
  }
  return { kind: "connection", reason: causeText(e) }
}

const makeApiClient = (baseUrl: string) => HttpApiClient.make(AgentApi, { baseUrl })
type AgentApiClient = Effect.Effect.Success<ReturnType<typeof makeApiClient>>

interface Entry {
  /** Address, version and trust the client was made for: a change makes a new one. */
  readonly ip: string
  readonly port: number
  readonly apiVersion: string
  readonly trust: string | null
  readonly origin: string
  readonly basePath: string
  readonly dispatcher: Undici.Dispatcher
  /** Made at the first rare request (V, revocation): reflecting AgentApi costs more than a quote. */
  readonly client: Effect.Effect<AgentApiClient>
  readonly scope: Scope.CloseableScope
}

/**
 * An HttpClient over an undici connection pool for one agent: TLS with the TLS policy, the pinned
 * certificate (or agent_ca) as the only trust, the verifier's client certificate, no host-name
 * check. undici rather than node:https: about 0.3 ms less CPU per request (bench/verifier-fleet.ts).
 * `context` is that TLS configuration built once (shared by the agents that trust the same
 * certificate or CA): without it every connection parsed the key and certificates again, the
 * largest part of an enrolment's CPU (bench/agent-add.ts).
 */
const undiciAgent = (tls: VerifierClientTlsShape, pinned: string | null, timeoutMs: number, context: NodeTls.SecureContext | undefined) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new Undici.Agent({
        connect: {
          ...(context === undefined ? contextOptions(tls, pinned) : { secureContext: context }),
          rejectUnauthorized: true,
          checkServerIdentity: () => undefined,
          timeout: timeoutMs
        }
      })
    ),
    (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
  )

const contextOptions = (tls: VerifierClientTlsShape, pinned: string | null) => ({
  ca: tls.agentCa ?? pinned ?? "",
  ...(tls.cert === undefined ? {} : { cert: tls.cert }),
  ...(tls.key === undefined ? {} : { key: tls.key }),
  ...clientTlsPolicy
})

/**
 * The TLS contexts of the agents polled, one per trusted certificate text, kept while an agent uses
 * it. A context that cannot be built (a pinned certificate that is not PEM) is none: the agent's
 * connections then fail as `tls` when they are tried, as they always did.
 */
const makeContexts = (tls: VerifierClientTlsShape) => {
  const contexts = new Map<string, { readonly context: NodeTls.SecureContext; users: number }>()
  const acquire = (pinned: string | null): { readonly context: NodeTls.SecureContext | undefined; readonly release: () => void } => {
    const trust = tls.agentCa ?? pinned ?? ""
    let held = contexts.get(trust)
    if (held === undefined) {
      try {
        held = { context: NodeTls.createSecureContext(contextOptions(tls, pinned)), users: 0 }
      } catch {
        return { context: undefined, release: () => undefined }
      }
      contexts.set(trust, held)
    }
    const h = held
    h.users++
    return {
      context: h.context,
      release: () => {
        if (--h.users === 0 && contexts.get(trust) === h) contexts.delete(trust)
      }
    }
  }
  return { acquire }
}

/** The live client: one pool per agent, closed on release and when the layer closes. */
export const makeAgentClient = (tls: VerifierClientTlsShape, requestTimeoutSeconds: number, traced = true) =>
  Effect.gen(function*() {
    const entries = new Map<string, Entry>()
    const contexts = makeContexts(tls)
    const timeout = Duration.seconds(requestTimeoutSeconds)
    const timeoutMs = requestTimeoutSeconds * 1000

    const closeEntry = (e: Entry) => Scope.close(e.scope, Exit.void)
    yield* Effect.addFinalizer(() => Effect.forEach([...entries.values()], closeEntry, { discard: true }))

    const trustOf = (t: AgentTarget) => (tls.agentCa === undefined ? t.mtlsCert : "ca")
    /** The agent's client when it was made for this address, version and trust (no allocation: every cycle asks). */
    const current = (t: AgentTarget): Entry | undefined => {
      const known = entries.get(t.agentId)
      return known !== undefined && known.port === t.port && known.ip === t.ip && known.apiVersion === t.apiVersion && known.trust === trustOf(t)
        ? known
        : undefined
    }

    const clientFor = (t: AgentTarget): Effect.Effect<Entry> => {
      const known = current(t)
      return known !== undefined ? Effect.succeed(known) : makeEntry(t)
    }
    const makeEntry = (t: AgentTarget) =>
      Effect.gen(function*() {
        const scheme = tls.mtls ? "https" : "http"
        const host = t.ip.includes(":") ? `[${t.ip}]` : t.ip
        const known = entries.get(t.agentId)
        if (known !== undefined) {
          entries.delete(t.agentId)
          yield* closeEntry(known)
        }
        const scope = yield* Scope.make()
        const context = contexts.acquire(t.mtlsCert)
        yield* Scope.addFinalizer(scope, Effect.sync(context.release))
        const dispatcher = yield* undiciAgent(tls, t.mtlsCert, timeoutMs, context.context).pipe(Scope.extend(scope))
        const origin = `${scheme}://${host}:${t.port}`
        const basePath = `/v${t.apiVersion}`
        const client = yield* Effect.cached(makeApiClient(origin + basePath).pipe(
          Effect.provideService(HttpClient.HttpClient, NodeHttpClient.makeUndici(dispatcher))
        ))
        const entry: Entry = { ip: t.ip, port: t.port, apiVersion: t.apiVersion, trust: trustOf(t), origin, basePath, dispatcher, client, scope }
        entries.set(t.agentId, entry)
        return entry
      })

    /** The quote: one undici request and one schema decode (the hot path of every cycle); its pool is looked up when called. */
    const fastQuote = (t: AgentTarget, r: QuoteRequest) => {
      const known = current(t)
      const request = known !== undefined
        ? requestQuote(known.dispatcher, known.origin, known.basePath, r, timeoutMs)
        : Effect.flatMap(makeEntry(t), (e) => requestQuote(e.dispatcher, e.origin, e.basePath, r, timeoutMs))
      return request.pipe(
        Effect.catchAll((c) =>
          Effect.zipRight(
            recordAgentRequestError(c.kind),
            Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation: "quote", kind: c.kind, status: c.status, reason: c.reason }))
          )
        )
      )
    }

    const call = <A>(t: AgentTarget, operation: AgentRequestFailed["operation"], f: (c: AgentApiClient) => Effect.Effect<A, unknown>) =>
      Effect.flatMap(clientFor(t), (e) => Effect.flatMap(e.client, f)).pipe(
        Effect.timeoutFail({ duration: timeout, onTimeout: () => ({ _tag: "TimeoutException" }) }),
        Effect.catchAll((e) => {
          const c = classify(e)
          return Effect.zipRight(
            recordAgentRequestError(c.kind),
            Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation, kind: c.kind, status: c.status, reason: c.reason }))
          )
        })
      )

    const shape: AgentClientShape = {
      // the quote's span only when spans are exported: it is made on every cycle of every agent
      integrityQuote: traced
        ? (t, r) =>
          fastQuote(t, r).pipe(
            Effect.withSpan("AgentClient.integrityQuote", {
              attributes: { agent_id: t.agentId, partial: r.partial, ima_ml_entry: r.imaEntry },
              captureStackTrace: false
            })
          )
        : fastQuote,
      deliverV: (t, encryptedKey) =>
        call(t, "vkey", (c) => c.keys.vkey({ payload: { encrypted_key: encryptedKey } })).pipe(
          Effect.asVoid,
          Effect.withSpan("AgentClient.deliverV", { attributes: { agent_id: t.agentId } })
        ),
      revocation: (t, body) =>
        call(t, "revocation", (c) => c.notifications.revocation({ payload: { msg: body.msg, signature: body.signature } })).pipe(
          Effect.asVoid,
          Effect.withSpan("AgentClient.revocation", { attributes: { agent_id: t.agentId } })
        ),
      release: (agentId) =>
        Effect.suspend(() => {
          const e = entries.get(agentId)
          if (e === undefined) return Effect.void
          entries.delete(agentId)
          return closeEntry(e)
        })
    }
    return shape
  })

/** AgentClient from the verifier's client TLS identity and `request_timeout`. */
export const AgentClientLive: Layer.Layer<AgentClient, never, VerifierClientTls | VerifierConfig> = Layer.scoped(
  AgentClient,
  Effect.gen(function*() {
    const tls = yield* VerifierClientTls
    const config = yield* VerifierConfig
    return yield* makeAgentClient(tls, config.request_timeout, config.otlp_endpoint.trim() !== "")
  })
)
