/**
 * PKI figures the servers pay per request, each against the bare node:crypto work it wraps,
 * measured interleaved in the same run:
 * - EK certificate chain validation (swtpm RSA EK; root and issuer in the trust store, so the
 *   issuer is the anchor; what each registration costs) vs the one signature check it implies;
 * - admin client-certificate checks (parse + chain + EKU; per admin request) vs parsing alone;
 * - issuing an EC P-256 certificate (pkijs TBS + node signature) vs crypto.sign of a same-size TBS.
 */
import * as crypto from "node:crypto"
import { readFileSync } from "node:fs"
import { performance } from "node:perf_hooks"
import { Either } from "effect"
import { isAdminCertificate } from "../src/pki/admin.js"
import { EKU, generateKeyPair, issueCertificate } from "../src/pki/certificate.js"
import { trustStoreOf, verifyChain } from "../src/pki/chain.js"

const ROUND_MS = 250
const ROUNDS = 6

const runFor = (ms: number, f: () => boolean) => {
  const start = performance.now()
  let n = 0
  let elapsed = 0
  do {
    for (let i = 0; i < 8; i++) if (!f()) throw new Error("check failed in the benchmark")
    n += 8
    elapsed = performance.now() - start
  } while (elapsed < ms)
  return { n, elapsed }
}

/** Interleaves subject and baseline rounds so machine load hits both alike; returns ops/s. */
const compare = (subject: () => boolean, baseline: () => boolean) => {
  runFor(200, subject)
  runFor(200, baseline)
  const tot = { s: { n: 0, t: 0 }, b: { n: 0, t: 0 } }
  for (let r = 0; r < ROUNDS; r++) {
    const s = runFor(ROUND_MS, subject)
    const b = runFor(ROUND_MS, baseline)
    tot.s.n += s.n
    tot.s.t += s.elapsed
    tot.b.n += b.n
    tot.b.t += b.elapsed
  }
  return { subject: (tot.s.n / tot.s.t) * 1000, baseline: (tot.b.n / tot.b.t) * 1000 }
}

const vec = (p: string) => readFileSync(new URL(`../../shared/vectors/tpm/${p}`, import.meta.url))
const root = new crypto.X509Certificate(vec("ca/swtpm-localca-rootca-cert.pem"))
const issuer = new crypto.X509Certificate(vec("ca/swtpm-localca-issuercert.pem"))
const ek = new crypto.X509Certificate(vec("ek/ek_rsa_cert.der"))
const store = trustStoreOf([root, issuer])
const now = new Date("2027-06-01T00:00:00Z")

const chain = compare(
  () => Either.isRight(verifyChain(ek, store, now)),
  () => ek.verify(issuer.publicKey)
)

const caKeys = generateKeyPair("ec-p256")
const validity = { notBefore: new Date("2026-01-01T00:00:00Z"), notAfter: new Date("2028-01-01T00:00:00Z") }
const caDer = Either.getOrThrow(issueCertificate({
  subject: { CN: "bench CA" }, publicKey: caKeys.publicKey, signingKey: caKeys.privateKey, ...validity,
  basicConstraints: { ca: true }, keyUsage: ["keyCertSign"]
}))
const leafKey = generateKeyPair("ec-p256").publicKey
const issueLeaf = () =>
  issueCertificate({
    subject: { CN: "admin", O: "attest" }, publicKey: leafKey, issuer: { certificate: caDer, privateKey: caKeys.privateKey }, ...validity,
    basicConstraints: { ca: false }, keyUsage: ["digitalSignature"], extendedKeyUsage: [EKU.clientAuth]
  })
const adminDer = Either.getOrThrow(issueLeaf())
const adminStore = trustStoreOf([new crypto.X509Certificate(caDer)])

const admin = compare(
  () => Either.isRight(isAdminCertificate(adminDer, adminStore, now)),
  () => new crypto.X509Certificate(adminDer).subject.length > 0
)

const tbsLike = crypto.randomBytes(adminDer.length - 80)
const issue = compare(
  () => Either.isRight(issueLeaf()),
  () => crypto.sign("sha256", tbsLike, { key: caKeys.privateKey, dsaEncoding: "der" }).length > 0
)

const fmt = (x: number) => x.toFixed(0).padStart(8)
console.log(`EK chain validation (RSA EK):        ${fmt(chain.subject)} /s   X509Certificate.verify:     ${fmt(chain.baseline)} /s   ratio ${(chain.subject / chain.baseline).toFixed(2)}`)
console.log(`admin certificate check (EC P-256):  ${fmt(admin.subject)} /s   X509 parse alone:           ${fmt(admin.baseline)} /s   ratio ${(admin.subject / admin.baseline).toFixed(2)}`)
console.log(`certificate issuance (EC P-256):     ${fmt(issue.subject)} /s   crypto.sign of a TBS:       ${fmt(issue.baseline)} /s   ratio ${(issue.subject / issue.baseline).toFixed(2)}`)
console.log(`BENCH ek_chain_validations_per_s ${chain.subject.toFixed(0)}`)
console.log(`BENCH ek_chain_vs_raw_verify_ratio ${(chain.subject / chain.baseline).toFixed(3)}`)
console.log(`BENCH admin_checks_per_s ${admin.subject.toFixed(0)}`)
console.log(`BENCH cert_issuance_per_s ${issue.subject.toFixed(0)}`)
console.log(`BENCH cert_issuance_vs_raw_sign_ratio ${(issue.subject / issue.baseline).toFixed(3)}`)
