/**
 * Who is calling. Spec §5.2.3: a request with an `Authorization` header is an agent authentication
 * attempt (PoP bearer token) and is never upgraded to admin by a client certificate it may also
 * present; without the header the mTLS client certificate decides between admin and anonymous.
 */
import { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, FiberRef, Layer, Option } from "effect"
import { fnTraced } from "../ops/fnTraced.js"
import type { TLSSocket } from "node:tls"

export type Identity =
  | { readonly _tag: "Admin"; readonly name: string }
  /** An agent by its PoP token; `sessionId` names the session the token belongs to (push model). */
  | { readonly _tag: "Agent"; readonly agentId: string; readonly sessionId?: string }
  | { readonly _tag: "Anonymous"; readonly reason: string }

/** The client certificate as the TLS socket saw it: leaf first, then whatever chain the peer sent. */
export interface PeerCertificate {
  readonly der: Uint8Array
  readonly chain: ReadonlyArray<Uint8Array>
  /** The TLS layer's own chain check against the listener's `ca` (node's `socket.authorized`). */
  readonly tlsAuthorized: boolean
}

/** Which listener a request arrived on: plain HTTP or HTTPS (where client certificates can exist). */
export interface Listener {
  readonly name: string
  readonly tls: boolean
}
export const currentListener: FiberRef.FiberRef<Listener> = FiberRef.unsafeMake<Listener>({ name: "http", tls: false })

/**
 * TLS sockets whose peer certificate cannot change: attest's servers refuse renegotiation
 * (nodeServer in HttpServers.ts), so TLS 1.2 cannot swap the certificate mid-connection (TLS 1.3
 * has no renegotiation at all). Their peer certificate is read once per connection: reading it
 * (node builds the whole chain as objects) cost more than the rest of an admin request.
 */
const fixedPeers = new WeakSet<object>()
const peerCache = new WeakMap<object, Option.Option<PeerCertificate>>()

/** Refuses renegotiation on a server's TLS socket and lets its peer certificate be read once. */
export const fixPeerCertificate = (socket: TLSSocket): void => {
  socket.disableRenegotiation()
  fixedPeers.add(socket)
}

const readPeerCertificate = (socket: Partial<TLSSocket>): Option.Option<PeerCertificate> => {
  if (typeof socket.getPeerCertificate !== "function") return Option.none()
  const leaf = socket.getPeerCertificate(true)
  if (!leaf || !leaf.raw) return Option.none()
  const chain: Array<Uint8Array> = []
  const seen = new Set<string>([leaf.fingerprint256])
  let next = leaf.issuerCertificate
  // node links a self-issued root to itself; stop at the first repeat
  while (next && next.raw && !seen.has(next.fingerprint256)) {
    seen.add(next.fingerprint256)
    chain.push(new Uint8Array(next.raw))
    next = next.issuerCertificate
  }
  return Option.some({ der: new Uint8Array(leaf.raw), chain, tlsAuthorized: socket.authorized === true })
}

/**
 * The peer certificate of the request's TLS socket, if any was presented: the same object for
 * every request of a connection whose certificate cannot change (fixPeerCertificate).
 */
export const peerCertificate = (request: HttpServerRequest.HttpServerRequest): Option.Option<PeerCertificate> => {
  const socket = NodeHttpServerRequest.toIncomingMessage(request).socket as Partial<TLSSocket>
  if (!fixedPeers.has(socket)) return readPeerCertificate(socket)
  let peer = peerCache.get(socket)
  if (peer === undefined) {
    peer = readPeerCertificate(socket)
    peerCache.set(socket, peer)
  }
  return peer
}

/**
 * RFC 6750 §2.1, the one Bearer rule of every API version: `"Bearer" 1*SP b64token`, the scheme
 * case-insensitive (ABNF strings are), b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+"
 * / "/" ) *"=". Leading and trailing whitespace is not part of a field value (RFC 9110 §5.5).
 */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i

/** The token of an `Authorization` header value, or None when the value is not `Bearer <b64token>`. */
export const parseBearer = (header: string): Option.Option<string> => {
  const m = BEARER.exec(header.trim())
  return m === null ? Option.none() : Option.some(m[1]!)
}

/** None without an `Authorization` header; with one, its token, or "" when it is not `Bearer <b64token>` (an invalid token). */
export const bearerToken = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> => {
  const header = request.headers["authorization"]
  if (header === undefined) return Option.none()
  return Option.some(Option.getOrElse(parseBearer(header), () => ""))
}

export interface ClientIdentityOptions {
  /** Admin = chains to trusted_client_ca, not expired, Client Authentication EKU (src/pki). */
  readonly isAdmin: (peer: PeerCertificate) => Effect.Effect<Option.Option<string>>
  /** PoP token check; components without tokens (the registrar) leave it out. */
  readonly verifyBearer?: (token: string) => Effect.Effect<Option.Option<string>>
}

export interface ClientIdentityShape {
  readonly identify: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Identity>
}

export class ClientIdentity extends Context.Tag("attest/http/ClientIdentity")<ClientIdentity, ClientIdentityShape>() {
  static make(options: ClientIdentityOptions): ClientIdentityShape {
    return {
      identify: fnTraced("ClientIdentity.identify")(function*(request: HttpServerRequest.HttpServerRequest) {
        const token = bearerToken(request)
        if (Option.isSome(token)) {
          // §5.2.3: never fall back to mTLS when a bearer token was sent
          if (options.verifyBearer === undefined) {
            return { _tag: "Anonymous", reason: "bearer tokens are not accepted by this service" } as const
          }
          const agent = yield* options.verifyBearer(token.value)
          return Option.match(agent, {
            onNone: () => ({ _tag: "Anonymous", reason: "invalid or expired bearer token" }) as const,
            onSome: (agentId) => ({ _tag: "Agent", agentId }) as const
          })
        }
        const peer = peerCertificate(request)
        if (Option.isNone(peer)) return { _tag: "Anonymous", reason: "no client certificate" } as const
        const admin = yield* options.isAdmin(peer.value)
        return Option.match(admin, {
          onNone: () => ({ _tag: "Anonymous", reason: "client certificate is not a valid admin certificate" }) as const,
          onSome: (name) => ({ _tag: "Admin", name }) as const
        })
      })
    }
  }

  static layer(options: ClientIdentityOptions): Layer.Layer<ClientIdentity> {
    return Layer.succeed(ClientIdentity, ClientIdentity.make(options))
  }
}
