/**
 * An admin's verdict is kept per connection (src/http/Tls.ts adminCheck over identity.ts
 * peerCertificate, one object per connection) and only while it still holds: a CRL that revokes
 * the certificate, or a time past its validity, refuses the next request of the same connection.
 * A connection cannot swap its certificate: attest's TLS listeners refuse renegotiation.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import * as crypto from "node:crypto"
import { readFileSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import * as tls from "node:tls"
import { nodeServer } from "../../src/http/HttpServers.js"
import { adminCheck } from "../../src/http/Tls.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { issueAdmin } from "../../src/pki/ca.js"
import { revocationListOf, type RevocationList } from "../../src/pki/crl.js"
import { loadCaCrl, revokeAdmin } from "../../src/pki/revoke.js"
import { makeTestPki, removePki } from "../registrar/harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const caDer = new Uint8Array(new crypto.X509Certificate(pki.caPem).raw)
const trusted = trustStoreOf([new crypto.X509Certificate(pki.caPem)])
const derOf = (pem: string) => new Uint8Array(new crypto.X509Certificate(pem).raw)

describe("adminCheck keeps a granted verdict per connection while it holds", () => {
  it.effect("a CRL that revokes the certificate refuses the next request of the same connection", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.now())
      yield* Effect.orDie(issueAdmin(pki.dir, "carol"))
      const peer = { der: derOf(readFileSync(join(pki.dir, "carol-cert.crt"), "utf8")) }
      let list: RevocationList | undefined = undefined
      const check = adminCheck(trusted, { current: Effect.sync(() => list) })
      expect(yield* check(peer)).toEqual(Option.some("carol"))
      expect(yield* check(peer)).toEqual(Option.some("carol"))
      yield* Effect.orDie(revokeAdmin({ dir: pki.dir, name: "carol" }))
      list = revocationListOf([(yield* Effect.orDie(loadCaCrl(pki.dir, caDer)))!], "cacrl.der")
      expect(yield* check(peer)).toEqual(Option.none())
    }))

  it.effect("a time past the certificate's validity refuses it, a time within keeps it", () =>
    Effect.gen(function*() {
      const x = new crypto.X509Certificate(pki.clients.admin.cert!)
      const peer = { der: new Uint8Array(x.raw) }
      const check = adminCheck(trusted)
      yield* TestClock.setTime(Date.now())
      expect(yield* check(peer)).toEqual(Option.some("client"))
      yield* TestClock.setTime(new Date(x.validTo).getTime() - 1000)
      expect(yield* check(peer)).toEqual(Option.some("client"))
      yield* TestClock.setTime(new Date(x.validTo).getTime() + 1000)
      expect(yield* check(peer)).toEqual(Option.none())
      yield* TestClock.setTime(new Date(x.validFrom).getTime() - 1000)
      expect(yield* check(peer)).toEqual(Option.none())
    }))
})

describe("attest's TLS listeners refuse renegotiation", () => {
  it.effect("a TLS 1.2 client asking to renegotiate is refused; the connection's certificate stays the handshake's", () =>
    Effect.gen(function*() {
      const server = nodeServer({ tls: { key: pki.serverKey, cert: pki.serverCert, clientCa: pki.caPem } })
      server.on("request", (_req, res) => res.end("ok"))
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => (server.closeAllConnections(), server.close()))
      )
      const port = (server.address() as AddressInfo).port
      const outcome = yield* Effect.async<Either.Either<string, string>>((resume) => {
        const socket = tls.connect({ host: "127.0.0.1", port, ca: pki.caPem, cert: pki.clients.admin.cert!, key: pki.clients.admin.key!, maxVersion: "TLSv1.2", servername: "localhost", checkServerIdentity: () => undefined }, () => {
          socket.on("error", (e) => resume(Effect.succeed(Either.left(e.message))))
          socket.on("close", () => resume(Effect.succeed(Either.left("closed"))))
          const asked = socket.renegotiate({ rejectUnauthorized: false }, (e) => {
            resume(Effect.succeed(e === null ? Either.right("renegotiated") : Either.left(e.message)))
            socket.destroy()
          })
          if (!asked) resume(Effect.succeed(Either.left("renegotiate() refused locally")))
        })
      })
      expect(Either.isLeft(outcome), `renegotiation outcome: ${Either.merge(outcome)}`).toBe(true)
    }).pipe(Effect.scoped), 20_000)
})
