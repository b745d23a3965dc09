/**
 * The floor of one pull attestation (issue 25): what no verifier can avoid, measured in the bench's
 * own process (process.cpuUsage: every thread) in the same run as the verifier it is compared with.
 * - one signature check: node:crypto verify of a quote-sized message with an RSA-2048 RSASSA key
 *   and with an ECC P-256 ECDSA key (the fleet is half of each: their mean);
 * - the IMA hashes: per quote PER_QUOTE template hashes and PCR extends, and the quote's PCR digest;
 * - an empty keep-alive HTTPS request: client CPU of one GET on an open undici connection to a
 *   fleet agent (mTLS, its pinned certificate), answered by a small 404 from the fleet's process.
 */
import { createHash, generateKeyPairSync, sign, verify } from "node:crypto"
import * as Undici from "@effect/platform-node/Undici"
import { clientTlsPolicy } from "../src/http/tlsPolicy.js"
import { PER_QUOTE } from "./_fleet.js"

const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** CPU ms per call of `f`, over `n` calls after `n / 10` to warm up. */
const perCall = async (n: number, f: () => unknown): Promise<number> => {
  for (let i = 0; i < n / 10; i++) await f()
  const t = cpuMs()
  for (let i = 0; i < n; i++) await f()
  return (cpuMs() - t) / n
}

export interface Floor {
  readonly rsaVerifyMs: number
  readonly eccVerifyMs: number
  readonly imaHashesMs: number
  readonly requestMs: number
  /** Mean signature check + the IMA hashes + one request. */
  readonly totalMs: number
}

export const measureFloor = async (o: {
  readonly port: number
  readonly serverCert: string
  readonly clientCert: string
  readonly clientKey: string
}): Promise<Floor> => {
  const attest = new Uint8Array(145).fill(7)
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const ecc = generateKeyPairSync("ec", { namedCurve: "P-256" })
  const rsaSig = sign("sha256", attest, rsa.privateKey)
  const eccSig = sign("sha256", attest, { key: ecc.privateKey, dsaEncoding: "ieee-p1363" })
  const rsaVerifyMs = await perCall(3000, () => verify("sha256", attest, rsa.publicKey, rsaSig))
  const eccVerifyMs = await perCall(3000, () => verify("sha256", attest, { key: ecc.publicKey, dsaEncoding: "ieee-p1363" }, eccSig))
  const template = new Uint8Array(120).fill(3)
  let pcr = new Uint8Array(32)
  const imaHashesMs = await perCall(3000, () => {
    for (let k = 0; k < PER_QUOTE; k++) {
      const h = createHash("sha256").update(template).digest()
      pcr = createHash("sha256").update(pcr).update(h).digest()
    }
    return createHash("sha256").update(pcr).update(pcr).digest()
  })
  const agent = new Undici.Agent({
    connect: { ca: o.serverCert, cert: o.clientCert, key: o.clientKey, ...clientTlsPolicy, rejectUnauthorized: true, checkServerIdentity: () => undefined }
  })
  const origin = `https://127.0.0.1:${o.port}`
  const requestMs = await perCall(2000, async () => {
    const res = await agent.request({ origin, path: "/floor", method: "GET" })
    await res.body.text()
  })
  await agent.destroy()
  return { rsaVerifyMs, eccVerifyMs, imaHashesMs, requestMs, totalMs: (rsaVerifyMs + eccVerifyMs) / 2 + imaHashesMs + requestMs }
}
