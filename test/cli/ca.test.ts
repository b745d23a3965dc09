import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runAttest as attest } from "../support/cli.js"

describe("attest ca", () => {
  const dir = join(mkdtempSync(join(tmpdir(), "attest-cli-ca-")), "cv_ca")

  it.live("init creates the CA directory; a second init keeps everything", () => Effect.gen(function*() {
    const first = yield* attest("ca", "init", "--dir", dir, "--server-name", "registrar.example")
    expect(first.ok).toBe(true)
    expect(first.stdout).toContain(`created ${join(dir, "cacert.crt")}`)
    expect(first.stdout).toContain(`created ${join(dir, "client-cert.crt")}`)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    const server = new crypto.X509Certificate(readFileSync(join(dir, "server-cert.crt")))
    expect(server.subjectAltName).toContain("DNS:registrar.example")
    const second = yield* attest("ca", "init", "--dir", dir)
    expect(second.ok).toBe(true)
    expect(second.stdout).not.toContain("created")
    expect(second.stdout).toContain(`kept    ${join(dir, "cacert.crt")}`)
  }))

  it.live("issue-admin writes <name>-cert.crt and <name>-private.pem and refuses to overwrite them", () => Effect.gen(function*() {
    const r = yield* attest("ca", "issue-admin", "--name", "alice", "--dir", dir, "--days", "30")
    expect(r.ok).toBe(true)
    const cert = new crypto.X509Certificate(readFileSync(join(dir, "alice-cert.crt")))
    const ca = new crypto.X509Certificate(readFileSync(join(dir, "cacert.crt")))
    expect(cert.verify(ca.publicKey)).toBe(true)
    expect(cert.subject).toContain("CN=alice")
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"])
    expect(statSync(join(dir, "alice-private.pem")).mode & 0o777).toBe(0o600)
    const again = yield* attest("ca", "issue-admin", "--name", "alice", "--dir", dir)
    expect(again.ok).toBe(false)
    expect(again.stderr).toContain("alice-cert.crt already exists; refusing to overwrite it")
    expect(readFileSync(join(dir, "alice-cert.crt"))).toEqual(Buffer.from(cert.toString()))
  }))

  it.live("list shows subject, serial, EKU and expiry of every certificate", () => Effect.gen(function*() {
    const r = yield* attest("ca", "list", "--dir", dir)
    expect(r.ok).toBe(true)
    const rows = r.stdout.trim().split("\n").map((l) => l.split("\t"))
    expect(rows[0]).toEqual(["file", "subject", "serial", "eku", "expires", "status"])
    expect(rows.slice(1).map((c) => [c[0], c[3], c[5]])).toEqual([
      ["alice-cert.crt", "clientAuth", "valid"],
      ["cacert.crt", "-", "valid"],
      ["client-cert.crt", "clientAuth", "valid"],
      ["server-cert.crt", "serverAuth", "valid"]
    ])
    const alice = new crypto.X509Certificate(readFileSync(join(dir, "alice-cert.crt")))
    expect(rows[1]![2]).toBe(alice.serialNumber)
    expect(rows[1]![4]).toBe(new Date(alice.validTo).toISOString())
  }))

  it.live("revoke --name adds alice to the CRL; list then shows her certificate as revoked", () => Effect.gen(function*() {
    const alice = new crypto.X509Certificate(readFileSync(join(dir, "alice-cert.crt")))
    const r = yield* attest("ca", "revoke", "--name", "alice", "--dir", dir)
    expect(r.ok).toBe(true)
    expect(r.stdout).toContain(`revoked serial ${alice.serialNumber.replace(/^0+/, "")}`)
    // revocation is live (src/pki/liveRevocations.ts): nothing asks for a restart
    expect([r.stdout.includes("restart the"), r.stdout.includes("refuse the certificate without a restart")]).toEqual([false, true])
    const again = yield* attest("ca", "revoke", "--serial", alice.serialNumber, "--dir", dir)
    expect(again.ok).toBe(true)
    expect(again.stdout).toContain("already revoked")
    const list = yield* attest("ca", "list", "--dir", dir)
    const rows = list.stdout.trim().split("\n").map((l) => l.split("\t"))
    expect(rows.slice(1).map((c) => [c[0], c[5]])).toEqual([
      ["alice-cert.crt", "revoked"],
      ["cacert.crt", "valid"],
      ["client-cert.crt", "valid"],
      ["server-cert.crt", "valid"]
    ])
    const neither = yield* attest("ca", "revoke", "--dir", dir)
    expect(neither.ok).toBe(false)
    expect(neither.stderr).toContain("give exactly one of --name <administrator> or --serial <hex>")
  }))

  it.live("fails with a message for a directory without a CA", () => Effect.gen(function*() {
    const r = yield* attest("ca", "issue-admin", "--name", "bob", "--dir", join(dir, "..", "empty"))
    expect(r.ok).toBe(false)
    expect(r.stderr).toContain("cannot read")
  }))
  it.live("revocation-notifier makes a signing key pair without EKU once and keeps it", () => Effect.gen(function*() {
    const r = yield* attest("ca", "revocation-notifier", "--dir", dir)
    expect(r.ok).toBe(true)
    expect(r.stdout).toContain(`created ${join(dir, "RevocationNotifier-cert.crt")}`)
    const cert = new crypto.X509Certificate(readFileSync(join(dir, "RevocationNotifier-cert.crt")))
    expect(cert.verify(new crypto.X509Certificate(readFileSync(join(dir, "cacert.crt"))).publicKey)).toBe(true)
    expect(cert.keyUsage).toEqual(undefined)
    expect(statSync(join(dir, "RevocationNotifier-private.pem")).mode & 0o777).toBe(0o600)
    const again = yield* attest("ca", "revocation-notifier", "--dir", dir)
    expect(again.stdout).toContain(`kept    ${join(dir, "RevocationNotifier-cert.crt")}`)
    expect(readFileSync(join(dir, "RevocationNotifier-cert.crt"))).toEqual(Buffer.from(cert.toString()))
  }))
})
