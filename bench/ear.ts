/**
 * EAR tokens (src/ear): signed per second (appraisal + claims JSON + ES256 + base64url) and
 * verified per second (parse, jose's ES256 verify on WebCrypto, claims decoded through Schema; one
 * token at a time, each awaited), each against the bare node:crypto ES256 sign / verify of a
 * same-size message, interleaved in the same run.
 *
 *   npm run bench -- ear
 */
import { Effect, Either } from "effect"
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import { generateEarKey, signEar, verificationKeyOf, verifyEar } from "../src/ear/index.js"

const key = generateEarKey()
const keys = [verificationKeyOf(key)]
const options = { verifierId: "verifier-1", build: "attest 0.1.0" }
const verdict = {
  agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00000",
  failures: [{ type: "ima.validation.ima-ng.not_in_allowlist", context: { message: "File not found in allowlist: /usr/bin/x" } }],
  appraised: { quote: true, ima: true, boot: true },
  stopPolling: false,
  nonce: "k5a0PtTvWGYRTX8RGxWm"
}
const token = Either.getOrThrow(signEar(verdict, key, options, 1_700_000_000))
const message = Buffer.from(token.slice(0, token.lastIndexOf(".")))
const signature = crypto.sign("sha256", message, { key: key.privateKey, dsaEncoding: "ieee-p1363" })

const ROUND_MS = 300
const ROUNDS = 5
const rate = (f: () => unknown) => {
  const start = performance.now()
  let n = 0
  while (performance.now() - start < ROUND_MS) {
    for (let i = 0; i < 16; i++) f()
    n += 16
  }
  return (n * 1000) / (performance.now() - start)
}
const rateAsync = async (f: () => Promise<unknown>) => {
  const start = performance.now()
  let n = 0
  while (performance.now() - start < ROUND_MS) {
    for (let i = 0; i < 16; i++) await f()
    n += 16
  }
  return (n * 1000) / (performance.now() - start)
}
const compare = async (subject: () => unknown, baseline: () => unknown, async = false) => {
  const measure = (f: () => unknown) => (async ? rateAsync(f as () => Promise<unknown>) : Promise.resolve(rate(f)))
  await measure(subject)
  rate(baseline)
  const s: Array<number> = []
  const b: Array<number> = []
  for (let r = 0; r < ROUNDS; r++) {
    s.push(await measure(subject))
    b.push(rate(baseline))
  }
  const med = (xs: Array<number>) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
  return { subject: med(s), baseline: med(b) }
}

const sign = await compare(
  () => Either.getOrThrow(signEar(verdict, key, options, 1_700_000_000)),
  () => crypto.sign("sha256", message, { key: key.privateKey, dsaEncoding: "ieee-p1363" })
)
const verify = await compare(
  () => Effect.runPromise(verifyEar(token, keys)),
  () => {
    if (!crypto.verify("sha256", message, { key: key.publicKey, dsaEncoding: "ieee-p1363" }, signature)) throw new Error("verify failed")
  },
  true
)
console.log(`token: ${token.length} characters`)
console.log(`sign: ${sign.subject.toFixed(0)} tokens/s vs ${sign.baseline.toFixed(0)} bare ES256 signatures/s (${(sign.subject / sign.baseline).toFixed(2)}x)`)
console.log(`verify: ${verify.subject.toFixed(0)} tokens/s vs ${verify.baseline.toFixed(0)} bare ES256 verifications/s (${(verify.subject / verify.baseline).toFixed(2)}x)`)
console.log(`BENCH ear_sign_per_s ${sign.subject.toFixed(0)}`)
console.log(`BENCH ear_sign_ratio_to_es256 ${(sign.subject / sign.baseline).toFixed(2)}`)
console.log(`BENCH ear_verify_per_s ${verify.subject.toFixed(0)}`)
console.log(`BENCH ear_verify_ratio_to_es256 ${(verify.subject / verify.baseline).toFixed(2)}`)
