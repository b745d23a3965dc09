/**
 * Binding a listener, with an error that says which address could not be used and why (issue 8):
 * `registrar-http: cannot listen on 127.0.0.1:8890: the address is already in use (EADDRINUSE)`
 * instead of node's bare ServeError. Every attest server binds through `serveNode`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Schema } from "effect"
import type * as http from "node:http"

export class ListenError extends Schema.TaggedError<ListenError>()("ListenError", {
  /** The listener's name, e.g. `registrar-http`, `agent`. */
  listener: Schema.String,
  /** `host:port` as asked. */
  address: Schema.String,
  /** The system error code, e.g. EADDRINUSE. */
  code: Schema.String,
  message: Schema.String
}) {}

const REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: "the address is already in use",
  EACCES: "permission denied (ports below 1024 need privileges)",
  EADDRNOTAVAIL: "the address is not one of this host's",
  ENOTFOUND: "the host name does not resolve"
}

export const formatAddress = (host: string, port: number): string => `${host.includes(":") ? `[${host}]` : host}:${port}`

/** NodeHttpServer.make over an already configured node server, failing with a ListenError. */
export const serveNode = (name: string, server: http.Server, address: { readonly host: string; readonly port: number }) =>
  NodeHttpServer.make(() => server, address).pipe(
    Effect.mapError((e) => {
      const cause = e.cause as NodeJS.ErrnoException | undefined
      const code = cause?.code ?? "UNKNOWN"
      const where = formatAddress(address.host, address.port)
      return new ListenError({
        listener: name,
        address: where,
        code,
        message: `${name}: cannot listen on ${where}: ${REASONS[code] ?? cause?.message ?? "listen failed"} (${code})`
      })
    })
  )
