/**
 * The tenant's bootstrap pieces against what the attest agent accepts: U, auth_tag and the payload
 * through the agent's own BootstrapKeys (with V as the verifier sends it), `keys/verify`, the
 * certificate package unpacked and its autorun.sh run by the agent, a revocation message signed
 * with the package's key checked by the agent, and version negotiation.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import * as crypto from "node:crypto"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { make as makeKeys } from "../../src/agent/BootstrapKeys.js"
import { checkRevocation } from "../../src/agent/revocation.js"
import { readZip } from "../../src/agent/zip.js"
import { encryptForAgent, generateNk } from "../../src/keys/index.js"
import { initCa } from "../../src/pki/ca.js"
import { tpmPolicyText } from "../../src/tenant/add.js"
import { prepareBootstrap, randomChallenge, verifyHmac } from "../../src/tenant/bootstrap.js"
import { makeCertPackage } from "../../src/tenant/certPackage.js"
import { negotiate, offered } from "../../src/tenant/versions.js"
import { writeZip } from "../../src/tenant/zip.js"
import { revocationBody } from "../../src/attestation/revocation.js"

const agentId = "5c1d1f7e-0000-4000-8000-00000000b001"
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

/** The agent's key handling, as it runs behind keys/ukey, keys/vkey and keys/verify. */
const agentKeys = (dir: string, script?: string) => {
  const nk = generateNk()
  return Effect.map(makeKeys({ agentId, nk, payload: { dir, extractZip: true, script } }), (keys) => ({ nk, keys }))
}

/** V as the verifier sends it: RSA-OAEP-SHA1 to the NK. */
const vkeyBody = (nkPem: string, vBase64: string) => ({
  encrypted_key: b64(Either.getOrThrow(encryptForAgent(nkPem, new Uint8Array(Buffer.from(vBase64, "base64")))))
})

describe("tenant bootstrap keys", () => {
  it.effect("U with auth_tag and payload, then V: the agent derives K, decrypts the payload and answers keys/verify", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-tenant-boot-"))
      const { keys, nk } = yield* agentKeys(dir)
      const payload = new Uint8Array(Buffer.from("secret configuration\n"))
      const boot = Either.getOrThrow(prepareBootstrap(agentId, nk.publicPem, payload))
      expect(boot.k).toEqual(boot.u.map((u, i) => u ^ boot.v[i]!))
      expect(boot.ukey.auth_tag).toMatch(/^[0-9a-f]{96}$/)
      // IV(16) ‖ ciphertext ‖ tag(16), base64
      expect(Buffer.from(boot.ukey.payload!, "base64").length).toEqual(16 + payload.length + 16)

      yield* keys.ukey(boot.ukey)
      expect(Option.isNone(yield* keys.key)).toEqual(true)
      yield* keys.vkey(vkeyBody(nk.publicPem, boot.vBase64))
      expect(yield* keys.key).toEqual(Option.some(boot.k))
      expect(readFileSync(join(dir, "unzipped", "decrypted_payload"), "utf8")).toEqual("secret configuration\n")

      const challenge = randomChallenge()
      expect(challenge).toMatch(/^[A-Za-z0-9]{20}$/)
      const hmac = yield* keys.verify(challenge)
      expect(verifyHmac(boot.k, challenge, hmac)).toEqual(true)
      const other = Either.getOrThrow(prepareBootstrap(agentId, nk.publicPem, undefined))
      expect(verifyHmac(other.k, challenge, hmac)).toEqual(false)
    }))

  it.effect("a V that is not the tenant's leaves the agent without K (auth_tag does not match)", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-tenant-boot-"))
      const { keys, nk } = yield* agentKeys(dir)
      const boot = Either.getOrThrow(prepareBootstrap(agentId, nk.publicPem, undefined))
      yield* keys.ukey(boot.ukey)
      yield* keys.vkey(vkeyBody(nk.publicPem, b64(crypto.randomBytes(32))))
      expect(Option.isNone(yield* keys.key)).toEqual(true)
    }))

  it.effect("a certificate package: the agent unpacks it, runs autorun.sh, and checks revocations signed with its key", () =>
    Effect.gen(function*() {
      const root = mkdtempSync(join(tmpdir(), "attest-tenant-pkg-"))
      const caDir = join(root, "ca")
      yield* Effect.orDie(initCa({ dir: caDir }))
      const include = join(root, "include")
      mkdirSync(include)
      writeFileSync(join(include, "autorun.sh"), "#!/bin/sh\necho ran > autorun.out\n")
      chmodSync(join(include, "autorun.sh"), 0o755)
      writeFileSync(join(include, "app.conf"), "x = 1\n")

      const pkg = yield* makeCertPackage({ caDir, agentId, include: [include] })
      expect(pkg.names).toEqual([
        `${agentId}-public.pem`,
        `${agentId}-cert.crt`,
        `${agentId}-private.pem`,
        "cacert.crt",
        "cacrl.der",
        "cacrl.pem",
        "RevocationNotifier-cert.crt",
        "app.conf",
        "autorun.sh"
      ])
      expect(pkg.subject).toEqual(`CN=${agentId},O=attest`)
      expect(JSON.parse(pkg.metadata)).toEqual({ cert_serial: Number(pkg.certSerial), subject: pkg.subject })
      expect(pkg.metadata).toContain(`"cert_serial": ${pkg.certSerial},`)

      // the agent's own reader
      const entries = Either.getOrThrow(readZip(pkg.zip))
      expect(entries.map((e) => e.name)).toEqual(pkg.names)
      const agentCert = new crypto.X509Certificate(entries[1]!.data)
      const caCert = new crypto.X509Certificate(readFileSync(join(caDir, "cacert.crt")))
      expect(agentCert.verify(caCert.publicKey)).toEqual(true)
      // a server certificate: never an admin (client) certificate
      expect(agentCert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"])
      const notifier = new crypto.X509Certificate(entries[6]!.data)
      expect(notifier.keyUsage).toEqual(undefined)

      const dir = join(root, "agent-secure")
      const { keys, nk } = yield* agentKeys(dir, "autorun.sh")
      const boot = Either.getOrThrow(prepareBootstrap(agentId, nk.publicPem, pkg.zip))
      yield* keys.ukey(boot.ukey)
      yield* keys.vkey(vkeyBody(nk.publicPem, boot.vBase64))
      expect(readFileSync(join(dir, "unzipped", "autorun.out"), "utf8")).toEqual("ran\n")
      expect(readFileSync(join(dir, "unzipped", "app.conf"), "utf8")).toEqual("x = 1\n")
      const certAtAgent = readFileSync(join(dir, "unzipped", "RevocationNotifier-cert.crt"), "utf8")

      const input = {
        type: "revocation" as const,
        agent: { agentId, ip: "127.0.0.1", port: 9002, tpmPolicy: "{}", metaData: pkg.metadata },
        at: 1_800_000_000_000,
        event: { eventId: "ima.validation.ima-ng.not_in_allowlist", severityLabel: "emergency", context: { message: "m" } }
      }
      const signed = Either.getOrThrow(revocationBody(input, pkg.revocationKey))
      expect(Either.isRight(checkRevocation(signed, certAtAgent))).toEqual(true)
      const forged = Either.getOrThrow(revocationBody(input, crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()))
      expect(Either.isLeft(checkRevocation(forged, certAtAgent))).toEqual(true)

      // enrolling the same agent again reuses its certificate
      const again = yield* makeCertPackage({ caDir, agentId, include: [] })
      expect(again.certSerial).toEqual(pkg.certSerial)
      expect(existsSync(join(caDir, "RevocationNotifier-private.pem"))).toEqual(true)
    }))

  it("zip: stored and deflated entries read back by the agent's reader", () => {
    const big = new Uint8Array(10_000).fill(65)
    const tiny = new Uint8Array([1, 2, 3])
    const zip = writeZip([{ name: "a.txt", data: big }, { name: "dir/b.bin", data: tiny }], new Date("2026-11-23T10:00:00Z"))
    expect(zip.length).toBeLessThan(big.length)
    expect(Either.getOrThrow(readZip(zip))).toEqual([{ name: "a.txt", data: big }, { name: "dir/b.bin", data: tiny }])
  })

  it.effect("tpm_policy as Keylime's tenant sends it: the mask completed for IMA and measured boot, a bad policy refused", () =>
    Effect.gen(function*() {
      expect(yield* tpmPolicyText(Option.none(), { runtimePolicy: false, measuredBoot: false })).toEqual(`{"mask": "0x0"}`)
      expect(yield* tpmPolicyText(Option.none(), { runtimePolicy: true, measuredBoot: false })).toEqual(`{"mask": "0x400"}`)
      const pcr15 = "a".repeat(64)
      expect(yield* tpmPolicyText(Option.some(`{"15": ["${pcr15}"]}`), { runtimePolicy: true, measuredBoot: true })).toEqual(
        `{"15": ["${pcr15}"], "mask": "0xffff"}`
      )
      const bad = yield* Effect.either(tpmPolicyText(Option.some(`{"x": 1}`), { runtimePolicy: false, measuredBoot: false }))
      expect(Either.isLeft(bad) && bad.left.message).toMatch(/^--tpm-policy: /)
      const notJson = yield* Effect.either(tpmPolicyText(Option.some("{"), { runtimePolicy: false, measuredBoot: false }))
      expect(Either.isLeft(notJson) && notJson.left.message).toEqual("--tpm-policy: not JSON: {")
    }))

  it("version negotiation: the highest version both speak", () => {
    expect(negotiate(["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"], ["1.0", "2.0", "2.1", "2.2"])).toEqual("2.2")
    expect(negotiate(["2.0", "2.1"], ["2.10", "2.1"])).toEqual("2.1")
    expect(negotiate(["2.9", "2.10"], ["2.10", "2.9"])).toEqual("2.10")
    expect(negotiate(["2.0"], ["3.0"])).toEqual(undefined)
    // an agent before API 2.5 names only its one version; registrars and verifiers list theirs
    expect(offered({ supported_versions: undefined, current: "2.2" })).toEqual(["2.2"])
    expect(offered({ supported_versions: [], current: "2.6" })).toEqual(["2.6"])
    expect(offered({ supported_versions: ["2.0", "2.1"], current: "2.1" })).toEqual(["2.0", "2.1"])
  })
})
