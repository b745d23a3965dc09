/**
 * The runners' transport in cluster mode: @effect/cluster's runner protocol (msgpack RPC: entity
 * messages, Stop, Restart, pings) over mutual TLS on node:tls, in place of the engine's plain TCP
 * (NodeClusterSocket). Who may speak is RunnerTls's decision (RunnerTls.ts); this file carries the
 * bytes. Both layers give the engine the interfaces it consumes from @effect/platform:
 *
 *   tlsSocketServer(address)   SocketServer listening on the runner port. A connection reaches the
 *                              engine only after its TLS handshake, and only when the certificate
 *                              the peer proved it holds is a runner's; any other is closed unread,
 *                              with a warning naming the peer's address and the reason.
 *   tlsClientProtocol          Runners.RpcClientProtocol: a connection to another runner presents
 *                              this runner's certificate and goes on only when the other's chains
 *                              to the trusted CAs (OpenSSL) and is a runner's (the same check).
 *
 * TLS 1.3 only (both ends are attest). A handshake that has not finished in HANDSHAKE_TIMEOUT is
 * dropped, so an idle TCP connection holds nothing.
 */
import { Runners, type RunnerAddress } from "@effect/cluster"
import { Socket, SocketServer } from "@effect/platform"
import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { Deferred, Effect, Exit, FiberSet, Layer, Runtime, type Scope } from "effect"
import * as tls from "node:tls"
import { RunnerTls, type RunnerTlsShape } from "./RunnerTls.js"

const HANDSHAKE_TIMEOUT_MS = 10_000
/** Connecting to another runner, handshake included: a loaded machine's TLS handshake takes a while, a dead runner is noticed by its failed pings. */
const OPEN_TIMEOUT = "5 seconds"
const MIN_VERSION = "TLSv1.3"

const peerOf = (conn: tls.TLSSocket): Uint8Array | undefined => {
  const raw = conn.getPeerCertificate()?.raw
  return raw === undefined || raw.length === 0 ? undefined : new Uint8Array(raw)
}

const whereFrom = (conn: { readonly remoteAddress?: string | undefined; readonly remotePort?: number | undefined }) =>
  `${conn.remoteAddress ?? "?"}:${conn.remotePort ?? "?"}`

/** An accepted connection as the Duplex NodeSocket.fromDuplex opens (closed again when its handler ends). */
const opened = (conn: tls.TLSSocket, failed: () => Error | undefined) =>
  Effect.acquireRelease(
    Effect.suspend((): Effect.Effect<tls.TLSSocket, Socket.SocketError> => {
      const error = failed()
      if (error !== undefined) return Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause: error }))
      if (conn.destroyed) return Effect.fail(new Socket.SocketCloseError({ reason: "Close", code: 1000 }))
      return Effect.succeed(conn)
    }),
    (c) => Effect.sync(() => c.destroyed || c.destroySoon())
  )

const makeServer = (address: RunnerAddress.RunnerAddress, t: RunnerTlsShape) =>
  Effect.gen(function*() {
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const broken = yield* Deferred.make<never, Error>()
    // connections admitted before the engine runs its handler wait here
    const waiting: Array<readonly [tls.TLSSocket, () => Error | undefined]> = []
    let serve = (conn: tls.TLSSocket, failed: () => Error | undefined) => void waiting.push([conn, failed])

    const server = tls.createServer({
      key: t.key,
      cert: t.cert,
      ca: t.ca,
      requestCert: true,
      // the chain and the usage are checked below, once the peer proved it holds the certificate's
      // key: OpenSSL's own check wants the Client Authentication usage, which a server_cert lacks
      rejectUnauthorized: false,
      minVersion: MIN_VERSION,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS
    })
    server.on("secureConnection", (conn) => {
      const from = whereFrom(conn)
      let error: Error | undefined
      conn.on("error", (e) => {
        error = e
      })
      runFork(Effect.flatMap(t.refusal(peerOf(conn)), (refused) => {
        if (refused === undefined) return Effect.sync(() => serve(conn, () => error))
        conn.destroy()
        return Effect.logWarning(`cluster: refused a connection to the runner port from ${from}: ${refused}`)
      }))
    })
    server.on("tlsClientError", (e, conn) => runFork(Effect.logDebug(`cluster: TLS handshake on the runner port from ${whereFrom(conn)} failed: ${e.message}`)))
    server.on("error", (e) => Deferred.unsafeDone(broken, Exit.fail(e)))

    yield* Effect.acquireRelease(
      Effect.async<void, SocketServer.SocketServerError>((resume) => {
        const onError = (cause: Error) => resume(Effect.fail(new SocketServer.SocketServerError({ reason: "Open", cause })))
        server.once("error", onError)
        server.listen({ host: address.host, port: address.port }, () => {
          server.off("error", onError)
          resume(Effect.void)
        })
      }),
      () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
    )
    const bound = server.address()
    const listening: SocketServer.Address = typeof bound === "object" && bound !== null
      ? { _tag: "TcpAddress", hostname: bound.address, port: bound.port }
      : { _tag: "TcpAddress", hostname: address.host, port: address.port }

    const run = <R, E, _>(handler: (socket: Socket.Socket) => Effect.Effect<_, E, R>) =>
      Effect.scoped(Effect.gen(function*() {
        const fibers = yield* FiberSet.make<unknown, unknown>()
        const fork = yield* FiberSet.runtime(fibers)<R>()
        const handle = (conn: tls.TLSSocket, failed: () => Error | undefined) =>
          void fork(
            NodeSocket.fromDuplex(opened(conn, failed)).pipe(
              Effect.flatMap(handler),
              Effect.catchAllCause((cause) => Effect.logDebug(`cluster: runner connection from ${whereFrom(conn)} ended`, cause))
            )
          )
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            serve = handle
            for (const [conn, failed] of waiting.splice(0)) handle(conn, failed)
          }),
          () => Effect.sync(() => (serve = (conn, failed) => void waiting.push([conn, failed])))
        )
        return yield* Deferred.await(broken).pipe(Effect.mapError((cause) => new SocketServer.SocketServerError({ reason: "Unknown", cause })))
      }))

    return SocketServer.SocketServer.of({ address: listening, run })
  })

/** The runner port over mutual TLS (RunnerTls): a SocketServer for the engine's RunnerServer. */
export const tlsSocketServer = (address: RunnerAddress.RunnerAddress): Layer.Layer<SocketServer.SocketServer, SocketServer.SocketServerError, RunnerTls> =>
  Layer.scoped(SocketServer.SocketServer, Effect.flatMap(RunnerTls, (t) => makeServer(address, t)))

/** A TLS connection to the runner at `address`, open once its certificate is a runner's. */
const connect = (address: RunnerAddress.RunnerAddress, t: RunnerTlsShape): Effect.Effect<tls.TLSSocket, Socket.SocketError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<tls.TLSSocket, Socket.SocketError>((resume) => {
      const conn = tls.connect({
        host: address.host,
        port: address.port,
        key: t.key,
        cert: t.cert,
        ca: t.ca,
        minVersion: MIN_VERSION,
        // any runner's certificate will do, whatever address it registered (RunnerTls.ts)
        checkServerIdentity: () => undefined
      })
      conn.once("secureConnect", () => resume(Effect.succeed(conn)))
      conn.on("error", (cause) => resume(Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause }))))
      return Effect.sync(() => conn.destroy())
    }),
    (conn) => Effect.sync(() => conn.destroyed || conn.destroySoon())
  ).pipe(
    Effect.tap((conn) =>
      Effect.flatMap(t.refusal(peerOf(conn)), (refused) =>
        refused === undefined ? Effect.void : Effect.zipRight(
          Effect.logWarning(`cluster: runner ${address.host}:${address.port} is not trusted: ${refused}`),
          Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause: new Error(`runner ${address.host}:${address.port} is not trusted: ${refused}`) }))
        ))
    )
  )

/** Connections to other runners over mutual TLS (RunnerTls), for the engine's Runners and health pings. */
export const tlsClientProtocol: Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization | RunnerTls> = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.gen(function*() {
    const serialization = yield* RpcSerialization.RpcSerialization
    const t = yield* RunnerTls
    return (address: RunnerAddress.RunnerAddress) =>
      Effect.flatMap(NodeSocket.fromDuplex(connect(address, t), { openTimeout: OPEN_TIMEOUT }), (socket) =>
        RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket.Socket, socket),
          Effect.provideService(RpcSerialization.RpcSerialization, serialization)
        ))
  })
)
