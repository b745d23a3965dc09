import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { isAdminCertificate } from "../../src/pki/admin.js"
import { revocationListOf } from "../../src/pki/crl.js"
import { loadCaCrl, revokeAdmin } from "../../src/pki/revoke.js"
import { CA_FILES, initCa, issueAdmin } from "../../src/pki/ca.js"
import { EKU, generateKeyPair, issueCertificate } from "../../src/pki/certificate.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { resolveClientTls, resolveServerTls, serverTlsOptionsOf, trustStoreOfMaterial } from "../../src/pki/tlsDir.js"
import { sectionDefaults } from "../../src/config/load.js"
import { registrarSection } from "../../src/config/sections.js"

const freshDir = () => join(mkdtempSync(join(tmpdir(), "attest-ca-")), "cv_ca")
const mode = (f: string) => statSync(f).mode & 0o777

describe("server components CA", () => {
  it.live("tls_dir = generate creates the Keylime layout with private files 0600 in a 0700 directory", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      const first = yield* initCa({ dir, serverNames: ["verifier.example", "10.0.0.5"] })
      expect(first.created.map((f) => f.slice(dir.length + 1))).toEqual(["cacert.crt", "server-cert.crt", "client-cert.crt", "cacrl.der"])
      expect(mode(dir)).toBe(0o700)
      for (const f of ["ca-private.pem", "server-private.pem", "client-private.pem"]) expect(mode(join(dir, f))).toBe(0o600)
      const ca = new crypto.X509Certificate(readFileSync(join(dir, "cacert.crt")))
      const server = new crypto.X509Certificate(readFileSync(join(dir, "server-cert.crt")))
      const client = new crypto.X509Certificate(readFileSync(join(dir, "client-cert.crt")))
      expect(ca.ca).toBe(true)
      expect(server.verify(ca.publicKey) && client.verify(ca.publicKey)).toBe(true)
      expect(server.keyUsage).toEqual([EKU.serverAuth])
      expect(server.subjectAltName).toContain("DNS:verifier.example")
      expect(server.subjectAltName).toContain("IP Address:10.0.0.5")
      expect(server.checkIP("127.0.0.1")).toBe("127.0.0.1")
      expect(server.checkHost("localhost")).toBe("localhost")
      expect(client.subject).toContain("CN=client")
      expect(client.keyUsage).toEqual([EKU.clientAuth])
    }))

  it.live("leaves the mode of an existing directory alone (an operator's own directory)", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      const { chmodSync, mkdirSync } = yield* Effect.promise(() => import("node:fs"))
      mkdirSync(dir)
      chmodSync(dir, 0o750)
      yield* initCa({ dir, keyKind: "ec-p256" })
      expect(mode(dir)).toBe(0o750)
      expect(mode(join(dir, "ca-private.pem"))).toBe(0o600)
    }))

  it.live("is idempotent: a second run reuses the CA and certificates byte for byte", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      yield* initCa({ dir })
      const before = readFileSync(join(dir, CA_FILES.caCert), "utf8")
      const again = yield* initCa({ dir })
      expect(again.created).toEqual([])
      expect(again.reused).toHaveLength(4)
      expect(readFileSync(join(dir, CA_FILES.caCert), "utf8")).toBe(before)
    }))

  it.live("refuses to replace half a CA", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      yield* initCa({ dir })
      writeFileSync(join(dir, "cacert.crt.bak"), "")
      const dir2 = freshDir()
      yield* initCa({ dir: dir2 })
      // leave only the certificate
      const { rmSync } = yield* Effect.promise(() => import("node:fs"))
      rmSync(join(dir2, CA_FILES.caKey))
      const e = yield* Effect.flip(initCa({ dir: dir2 }))
      expect(e.message).toContain("holds only half of a CA")
    }))

  it.live("issues one admin certificate per administrator and refuses to overwrite it", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      yield* initCa({ dir })
      const r = yield* issueAdmin(dir, "alice", 30)
      expect(r.certPath).toBe(join(dir, "alice-cert.crt"))
      expect(mode(join(dir, "alice-private.pem"))).toBe(0o600)
      const x = new crypto.X509Certificate(readFileSync(r.certPath))
      expect(x.subject).toContain("CN=alice")
      expect(new Date(x.validTo).getTime() - Date.now()).toBeLessThan(31 * 86_400_000)
      const e = yield* Effect.flip(issueAdmin(dir, "alice"))
      expect(e.message).toContain("already exists; refusing to overwrite it")
      expect((yield* Effect.flip(issueAdmin(dir, "../evil"))).message).toContain("must be letters")
    }))
})

describe("TLS material resolution", () => {
  it.live("tls_dir = default fails with a hint when the CA directory is empty", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(resolveServerTls({
        tlsDir: "default", serverKey: "default", serverCert: "default", trustedClientCa: ["default"], caDir: freshDir()
      }))
      expect(e.message).toContain("attest ca init")
    }))

  it.live("explicit server_key/server_cert/trusted_client_ca override the layout (relative to tls_dir)", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      yield* initCa({ dir })
      yield* issueAdmin(dir, "web", 10)
      const tls = yield* resolveServerTls({
        tlsDir: dir, serverKey: "web-private.pem", serverCert: join(dir, "web-cert.crt"), trustedClientCa: ["default", "client-cert.crt"]
      })
      expect(tls.files.key).toBe(join(dir, "web-private.pem"))
      expect(tls.files.ca).toEqual([join(dir, "cacert.crt"), join(dir, "client-cert.crt")])
      expect(tls.cert).toContain("BEGIN CERTIFICATE")
    }))

  it.live("generated material serves mTLS: the admin client is authorized and recognised as admin", () =>
    Effect.gen(function*() {
      const caDir = freshDir()
      const registrar = sectionDefaults(registrarSection, { tls_dir: "generate", ca_dir: caDir, ip: "10.1.2.3" })
      const server = yield* resolveServerTls(serverTlsOptionsOf(registrar))
      expect(new crypto.X509Certificate(server.cert).checkIP("10.1.2.3")).toBe("10.1.2.3")
      const client = yield* resolveClientTls({
        tlsDir: "default", clientKey: "default", clientCert: "default", trustedServerCa: ["default"], caDir
      })
      const seen = yield* Effect.async<{ authorized: boolean; raw: Buffer }>((resume) => {
        const srv = https.createServer({ key: server.key, cert: server.cert, ca: [...server.ca], requestCert: true, rejectUnauthorized: false }, (req, res) => {
          const sock = req.socket as import("node:tls").TLSSocket
          resume(Effect.succeed({ authorized: sock.authorized, raw: sock.getPeerCertificate().raw }))
          res.end("ok")
          srv.close()
        })
        srv.listen(0, "127.0.0.1", () => {
          const port = (srv.address() as AddressInfo).port
          https.get({ host: "127.0.0.1", port, path: "/", key: client.key, cert: client.cert, ca: [...client.ca] }, (res) => res.resume())
            .on("error", (e) => resume(Effect.die(e)))
        })
      })
      expect(seen.authorized).toBe(true)
      const store = yield* trustStoreOfMaterial(server)
      const admin = isAdminCertificate(new Uint8Array(seen.raw), store, new Date())
      expect(Either.isRight(admin) && admin.right.identity).toBe("client")
    }))
})

describe("isAdminCertificate", () => {
  const caKeys = generateKeyPair("ec-p256")
  const t0 = new Date("2026-01-01T00:00:00Z")
  const t1 = new Date("2028-01-01T00:00:00Z")
  const caDer = Either.getOrThrow(issueCertificate({
    subject: { CN: "admin CA" }, publicKey: caKeys.publicKey, signingKey: caKeys.privateKey,
    notBefore: t0, notAfter: t1, basicConstraints: { ca: true }, keyUsage: ["keyCertSign"]
  }))
  const store = trustStoreOf([new crypto.X509Certificate(caDer)])
  const leaf = (eku: ReadonlyArray<string> | undefined, issuer = { certificate: caDer, privateKey: caKeys.privateKey }, notAfter = t1) =>
    Either.getOrThrow(issueCertificate({
      subject: { CN: "bob" }, publicKey: generateKeyPair("ec-p256").publicKey, issuer,
      notBefore: t0, notAfter, ...(eku ? { extendedKeyUsage: eku } : {})
    }))
  const now = new Date("2027-01-01T00:00:00Z")
  const reason = (der: Uint8Array | undefined) => {
    const r = isAdminCertificate(der, store, now)
    return Either.isLeft(r) ? r.left.reason : `admin ${r.right.identity}`
  }

  it("accepts a certificate of the trusted CA with the Client Authentication EKU", () => {
    expect(reason(leaf([EKU.clientAuth]))).toBe("admin bob")
  })
  it("rejects no certificate, another CA, an expired one, and one without the Client Authentication EKU", () => {
    const otherKeys = generateKeyPair("ec-p256")
    const otherCa = Either.getOrThrow(issueCertificate({
      subject: { CN: "other CA" }, publicKey: otherKeys.publicKey, signingKey: otherKeys.privateKey,
      notBefore: t0, notAfter: t1, basicConstraints: { ca: true }
    }))
    expect(reason(undefined)).toBe("no-certificate")
    expect(reason(new Uint8Array([0x30, 0x03, 1, 2, 3]))).toBe("malformed")
    expect(reason(leaf([EKU.clientAuth], { certificate: otherCa, privateKey: otherKeys.privateKey }))).toBe("untrusted")
    expect(reason(leaf([EKU.clientAuth], undefined, new Date("2026-06-01T00:00:00Z")))).toBe("expired")
    expect(reason(leaf([EKU.serverAuth]))).toBe("no-client-auth-eku")
    expect(reason(leaf(undefined))).toBe("no-client-auth-eku")
  })
})

describe("admin certificate revocation", () => {
  it.live("initCa writes an empty CRL (0644) once and never replaces it", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      const { ca } = yield* initCa({ dir })
      expect(mode(join(dir, "cacrl.der"))).toBe(0o644)
      expect(mode(join(dir, "cacrl.pem"))).toBe(0o644)
      const crl = (yield* loadCaCrl(dir, ca.certificate))!
      expect(crl.revoked).toEqual([])
      expect(crl.crlNumber).toBe(1n)
      yield* revokeAdmin({ dir, name: "client" })
      const before = readFileSync(join(dir, "cacrl.der"))
      const again = yield* initCa({ dir })
      expect(again.reused).toContain(join(dir, "cacrl.der"))
      expect(readFileSync(join(dir, "cacrl.der"))).toEqual(before)
    }))

  it.live("a revoked admin gets reason 'revoked'; other admins and earlier entries are unaffected", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      const { ca } = yield* initCa({ dir })
      yield* issueAdmin(dir, "alice")
      yield* issueAdmin(dir, "bob")
      const der = (f: string) => new Uint8Array(new crypto.X509Certificate(readFileSync(join(dir, f))).raw)
      const trust = trustStoreOf([new crypto.X509Certificate(ca.certificate)])
      const now = new Date()
      const first = yield* revokeAdmin({ dir, name: "alice" })
      expect(first.added).toBe(true)
      expect(first.crlNumber).toBe(2n)
      const bobSerial = new crypto.X509Certificate(readFileSync(join(dir, "bob-cert.crt"))).serialNumber
      const second = yield* revokeAdmin({ dir, serial: bobSerial.toLowerCase() })
      expect(second.crlNumber).toBe(3n)
      const repeat = yield* revokeAdmin({ dir, name: "alice" })
      expect(repeat.added).toBe(false)
      const crl = (yield* loadCaCrl(dir, ca.certificate))!
      expect(crl.revoked.map((r) => r.serial)).toEqual([first.serial, second.serial])
      expect(crl.crlNumber).toBe(3n)
      const list = revocationListOf([crl])
      const alice = isAdminCertificate(der("alice-cert.crt"), trust, now, list)
      expect(Either.isLeft(alice) && alice.left.reason).toBe("revoked")
      expect(Either.isLeft(alice) && alice.left.serial).toBe(first.serial)
      expect(Either.isLeft(isAdminCertificate(der("bob-cert.crt"), trust, now, list))).toBe(true)
      const client = isAdminCertificate(der("client-cert.crt"), trust, now, list)
      expect(Either.isRight(client) && client.right.identity).toBe("client")
      // without a revocation list the old behaviour holds
      expect(Either.isRight(isAdminCertificate(der("alice-cert.crt"), trust, now))).toBe(true)
      // server certificate: still refused for its EKU, not as revoked
      const server = isAdminCertificate(der("server-cert.crt"), trust, now, list)
      expect(Either.isLeft(server) && server.left.reason).toBe("no-client-auth-eku")
    }))

  it.live("refuses to revoke an unknown name, a bad serial or the CA itself", () =>
    Effect.gen(function*() {
      const dir = freshDir()
      const { ca } = yield* initCa({ dir })
      const unknown = yield* Effect.flip(revokeAdmin({ dir, name: "nobody" }))
      expect(unknown.message).toContain("no certificate for administrator 'nobody'")
      const bad = yield* Effect.flip(revokeAdmin({ dir, serial: "xyz" }))
      expect(bad.message).toContain("not a positive hexadecimal number")
      const self = yield* Effect.flip(revokeAdmin({ dir, serial: new crypto.X509Certificate(ca.certificate).serialNumber }))
      expect(self.message).toContain("cannot revoke itself")
    }))

  it.live("server TLS resolution: the default CRL is the CA dir's; a named CRL of another CA stops start-up naming the file", () =>
    Effect.gen(function*() {
      const { revocationListOfMaterial } = yield* Effect.promise(() => import("../../src/pki/tlsDir.js"))
      const dir = freshDir()
      yield* initCa({ dir })
      yield* revokeAdmin({ dir, name: "client" })
      const opts = serverTlsOptionsOf({ ...sectionDefaults(registrarSection), tls_dir: "default", ca_dir: dir })
      const m = yield* resolveServerTls(opts)
      expect(m.crl?.file).toBe(join(dir, "cacrl.der"))
      const list = (yield* revocationListOfMaterial(m, yield* trustStoreOfMaterial(m)))!
      expect([...list.byIssuer.values()][0]!.size).toBe(1)
      const other = freshDir()
      yield* initCa({ dir: other })
      const foreign = yield* resolveServerTls({ ...opts, trustedClientCrl: join(other, "cacrl.der") })
      const err = yield* Effect.flip(revocationListOfMaterial(foreign, yield* trustStoreOfMaterial(foreign)))
      expect(err.message).toContain(join(other, "cacrl.der"))
      const missing = yield* Effect.flip(resolveServerTls({ ...opts, trustedClientCrl: join(other, "nope.der") }))
      expect(missing.message).toContain("nope.der")
      writeFileSync(join(other, "garbage.der"), "not a crl")
      const garbage = yield* resolveServerTls({ ...opts, trustedClientCrl: join(other, "garbage.der") })
      expect((yield* Effect.flip(revocationListOfMaterial(garbage, yield* trustStoreOfMaterial(garbage)))).message).toContain("garbage.der")
    }))
})
