/**
 * Requests node's HTTP parser refuses before any handler runs (raw non-ASCII bytes in the path,
 * malformed header lines, oversized headers, headers or a request not received in time) get the
 * envelope too, from the server's `clientError` hook, instead of node's bare `400 Bad Request`
 * with an empty body. The connection is closed afterwards: the parser cannot find the next request
 * in it. Errors below HTTP (a TLS handshake that failed or did not finish in time, a reset) close
 * the connection at once: there is no HTTP to answer in, and an answer queued on a TLS socket that
 * never shook hands would keep it open.
 */
import type * as http from "node:http"
import type { Duplex } from "node:stream"
import { StatusText } from "../../schemas/Envelope.js"

const REASONS: Readonly<Record<number, string>> = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" }

/** Status and envelope text for a parser error code (node's `HPE_*` and `ERR_HTTP_*`). */
export const clientErrorAnswer = (code: string | undefined): { readonly status: number; readonly text: string } =>
  code === "HPE_HEADER_OVERFLOW"
    ? { status: 431, text: StatusText.headersTooLarge }
    : code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? { status: 408, text: StatusText.requestTimeout }
    : { status: 400, text: StatusText.badRequestLine(code ?? "parse error") }

/** node's HTTP parser errors (`HPE_*`) and HTTP server errors (`ERR_HTTP_*`, e.g. the request timeout). */
const isHttpError = (code: string | undefined): boolean => code !== undefined && (code.startsWith("HPE_") || code.startsWith("ERR_HTTP_"))

/** Installs the hook on a node HTTP or HTTPS server. */
export const answerClientErrors = (server: http.Server): void => {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // a response already under way on this socket cannot be followed by another one
    const inFlight = (socket as Duplex & { readonly _httpMessage?: { readonly headersSent?: boolean } })._httpMessage
    if (!isHttpError(error.code) || !socket.writable || inFlight?.headersSent === true) {
      socket.destroy()
      return
    }
    const { status, text } = clientErrorAnswer(error.code)
    const body = JSON.stringify({ code: status, status: text, results: {} })
    socket.end(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
    )
  })
}
