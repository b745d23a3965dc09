/**
 * How long a client may hold a connection of an attest listener (issue 22 §6: connections sending
 * their headers one byte at a time were kept for minutes): every listener (verifier, registrar,
 * agent, metrics, dashboard) closes a client that has not finished its TLS handshake, or not sent
 * its request headers, within `headersMs` (node answers 408 through the clientError hook), one whose
 * whole request (headers and body) has not arrived within `requestMs`, and a keep-alive connection
 * idle for `keepAliveMs`. Node checks its connections every CHECK_MS, so a client is closed at most
 * that long after its bound.
 *
 * Servers read them from context (defaults when none is given); a config section sets them:
 *
 *   https.createServer({ ...nodeServerTimeouts(yield* ListenerTimeouts), key, cert })
 *   layer.pipe(Layer.provide(listenerTimeoutsLayer(section)))   // client_header_timeout, …
 */
import { Context, Effect, Layer, Schema } from "effect"
import { LISTENER_TIMEOUT_DEFAULTS } from "../config/listenerOptions.js"

export interface ListenerTimeoutsShape {
  /** TLS handshake, then request headers (each): a client slower than this is closed. */
  readonly headersMs: number
  /** The whole request, headers and body (node's requestTimeout). */
  readonly requestMs: number
  /** An idle keep-alive connection is closed after this long. */
  readonly keepAliveMs: number
}

/** The option tables' defaults (src/config/listenerOptions.ts): 10 s headers, 60 s request, 5 s keep-alive. */
export const DEFAULT_LISTENER_TIMEOUTS: ListenerTimeoutsShape = {
  headersMs: LISTENER_TIMEOUT_DEFAULTS.client_header_timeout * 1000,
  requestMs: LISTENER_TIMEOUT_DEFAULTS.client_request_timeout * 1000,
  keepAliveMs: LISTENER_TIMEOUT_DEFAULTS.keep_alive_timeout * 1000
}

/** Node's sweep of its connections (its default is 30 s, which let a slow client stay ~90 s). */
const CHECK_MS = 1_000

export class ListenerTimeouts extends Context.Reference<ListenerTimeouts>()("attest/http/ListenerTimeouts", {
  defaultValue: () => DEFAULT_LISTENER_TIMEOUTS
}) {}

/** A timeout option that cannot be honoured; the message names it. */
export class ListenerTimeoutsError extends Schema.TaggedError<ListenerTimeoutsError>()("ListenerTimeoutsError", {
  option: Schema.String,
  message: Schema.String
}) {}

/** The section's options, in seconds as written there. */
export interface ListenerTimeoutOptions {
  readonly client_header_timeout: number
  readonly client_request_timeout: number
  readonly keep_alive_timeout: number
}

/** The options checked: every bound > 0 (0 would mean none: fail closed), headers within the request. */
export const listenerTimeoutsOf = (o: ListenerTimeoutOptions): Effect.Effect<ListenerTimeoutsShape, ListenerTimeoutsError> => {
  for (const option of ["client_header_timeout", "client_request_timeout", "keep_alive_timeout"] as const) {
    if (!(o[option] > 0)) {
      return Effect.fail(new ListenerTimeoutsError({ option, message: `${option} = ${o[option]}: must be more than 0 seconds (a listener without this bound can be held open by a slow client)` }))
    }
  }
  if (o.client_header_timeout > o.client_request_timeout) {
    return Effect.fail(
      new ListenerTimeoutsError({
        option: "client_header_timeout",
        message: `client_header_timeout = ${o.client_header_timeout} is longer than client_request_timeout = ${o.client_request_timeout}: the headers are part of the request`
      })
    )
  }
  const ms = (s: number) => Math.max(1, Math.round(s * 1000))
  return Effect.succeed({ headersMs: ms(o.client_header_timeout), requestMs: ms(o.client_request_timeout), keepAliveMs: ms(o.keep_alive_timeout) })
}

/** node `http.createServer` / `https.createServer` options for the bounds. */
export const nodeServerTimeouts = (t: ListenerTimeoutsShape) => ({
  headersTimeout: t.headersMs,
  requestTimeout: t.requestMs,
  keepAliveTimeout: t.keepAliveMs,
  connectionsCheckingInterval: Math.max(100, Math.min(CHECK_MS, Math.floor(t.headersMs / 4)))
})

/** The same for an HTTPS server: its TLS handshake within the headers' bound too. */
export const nodeTlsServerTimeouts = (t: ListenerTimeoutsShape) => ({ ...nodeServerTimeouts(t), handshakeTimeout: t.headersMs })

/** The section's timeouts in context, failing with the option that cannot be used. */
export const listenerTimeoutsLayer = (o: ListenerTimeoutOptions): Layer.Layer<ListenerTimeouts, ListenerTimeoutsError> =>
  Layer.effect(ListenerTimeouts, listenerTimeoutsOf(o))
