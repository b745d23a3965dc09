/**
 * Cost of revocation: the per-request admin check with a 1,000-entry CRL against the same check
 * without one (baseline, same run), and start-up parse+verify of that CRL against a bare
 * crypto.verify of its TBS.
 */
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import { Either } from "effect"
import { isAdminCertificate } from "../src/pki/admin.js"
import { EKU, generateKeyPair, issueCertificate } from "../src/pki/certificate.js"
import { trustStoreOf } from "../src/pki/chain.js"
import { issueCrl, loadVerifiedCrl, revocationListOf } from "../src/pki/crl.js"

const rate = (f: () => boolean, ms = 1500): number => {
  for (let i = 0; i < 200; i++) f()
  let n = 0
  const t0 = performance.now()
  while (performance.now() - t0 < ms) for (let i = 0; i < 50; i++, n++) if (!f()) throw new Error("bench subject failed")
  return (n * 1000) / (performance.now() - t0)
}

const now = new Date()
const validity = { notBefore: new Date(now.getTime() - 86_400_000), notAfter: new Date(now.getTime() + 86_400_000 * 30) }
const caKeys = generateKeyPair("rsa2048")
const caDer = Either.getOrThrow(issueCertificate({
  subject: { CN: "bench CA" }, publicKey: caKeys.publicKey, signingKey: caKeys.privateKey, ...validity,
  basicConstraints: { ca: true, pathLen: 0 }, keyUsage: ["keyCertSign", "cRLSign"]
}))
const adminDer = Either.getOrThrow(issueCertificate({
  subject: { CN: "admin" }, publicKey: generateKeyPair("ec-p256").publicKey, issuer: { certificate: caDer, privateKey: caKeys.privateKey },
  ...validity, basicConstraints: { ca: false }, keyUsage: ["digitalSignature"], extendedKeyUsage: [EKU.clientAuth]
}))
const revoked = Array.from({ length: 1000 }, () => ({ serial: crypto.randomBytes(16).toString("hex"), revokedAt: now }))
const crlDer = Either.getOrThrow(issueCrl({
  issuer: { certificate: caDer, privateKey: caKeys.privateKey }, thisUpdate: now,
  nextUpdate: new Date(now.getTime() + 86_400_000), revoked, crlNumber: 1000n
}))
const crl = Either.getOrThrow(loadVerifiedCrl(crlDer, caDer))
const list = revocationListOf([crl])
const store = trustStoreOf([new crypto.X509Certificate(caDer)])

const withCrl = rate(() => Either.isRight(isAdminCertificate(adminDer, store, now, list)))
const without = rate(() => Either.isRight(isAdminCertificate(adminDer, store, now)))
const load = rate(() => Either.isRight(loadVerifiedCrl(crlDer, caDer)), 1500)
const caPub = new crypto.X509Certificate(caDer).publicKey
const rawVerify = rate(() => crypto.verify("sha256", crl.tbs, caPub, crl.signature), 1500)

const fmt = (x: number) => x.toFixed(0).padStart(8)
console.log(`admin check, 1000-entry CRL:   ${fmt(withCrl)} /s   without CRL:            ${fmt(without)} /s   ratio ${(withCrl / without).toFixed(2)}`)
console.log(`CRL parse+verify (1000, ${crlDer.length} B): ${fmt(load)} /s   crypto.verify of TBS:   ${fmt(rawVerify)} /s   ratio ${(load / rawVerify).toFixed(2)}`)
console.log(`BENCH admin_checks_with_crl_per_s ${withCrl.toFixed(0)}`)
console.log(`BENCH admin_check_crl_vs_none_ratio ${(withCrl / without).toFixed(3)}`)
console.log(`BENCH crl_1000_loads_per_s ${load.toFixed(0)}`)
console.log(`BENCH crl_load_vs_raw_verify_ratio ${(load / rawVerify).toFixed(3)}`)
