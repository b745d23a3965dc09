/**
 * How long a client may hold a server's connection (issue 22 §6), in the verifier's and the
 * registrar's sections (one spread line each); the same bounds apply to their metrics listeners.
 * src/http/timeouts.ts turns them into node's server options; the agent and the dashboard use the
 * defaults.
 */
import { seconds } from "./option.js"

/**
 * Headers are a few hundred bytes: 10 s is ample on any network. 60 s for a whole request covers
 * the verifier's largest uploads on a fast link (a 100 MiB policy needs ~14 Mbit/s). 5 s keep-alive
 * as node's default.
 */
export const LISTENER_TIMEOUT_DEFAULTS = { client_header_timeout: 10, client_request_timeout: 60, keep_alive_timeout: 5 } as const

export const listenerTimeoutOptions = {
  client_header_timeout: seconds(
    LISTENER_TIMEOUT_DEFAULTS.client_header_timeout,
    "seconds a client has to finish its TLS handshake, and then to send its request headers; a slower one is closed (408)"
  ),
  client_request_timeout: seconds(
    LISTENER_TIMEOUT_DEFAULTS.client_request_timeout,
    "seconds a client has to send its whole request, headers and body (408 after); raise it to upload very large policies over a slow link"
  ),
  keep_alive_timeout: seconds(LISTENER_TIMEOUT_DEFAULTS.keep_alive_timeout, "seconds an idle keep-alive connection is kept open")
} as const
