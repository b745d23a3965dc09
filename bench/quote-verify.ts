/**
 * Quotes verified per second (RSA-2048 RSASSA-SHA256, ECC P-256 ECDSA-SHA256; 4 PCRs of the
 * sha256 bank) against raw crypto.verify of the same key over the same attest, in the same run.
 * The quote path is the verifier's: Keylime quote string + TPM2B_PUBLIC AK bytes in, so it
 * includes base64 decoding, PCR blob and TPMS_ATTEST parsing, the PCR digest and the checks.
 */
import { constants, verify } from "node:crypto"
import { performance } from "node:perf_hooks"
import { Either } from "effect"
import { marshalTpm2bPublic } from "../src/tpm/public.js"
import { parseSignature } from "../src/tpm/signature.js"
import { verifyQuoteString } from "../src/tpm/verifyQuote.js"
import { makeAk, makeQuote } from "../test/tpm/quoteFixture.js"

const ROUND_MS = 250
const ROUNDS = 8 // per side: ~2 s each, interleaved

const runFor = (ms: number, f: () => boolean): { n: number; elapsed: number } => {
  const start = performance.now()
  let n = 0
  let elapsed = 0
  do {
    for (let i = 0; i < 16; i++) if (!f()) throw new Error("verification failed in the benchmark")
    n += 16
    elapsed = performance.now() - start
  } while (elapsed < ms)
  return { n, elapsed }
}

const bench = (label: "rsa" | "ecc") => {
  const ak = makeAk(label)
  const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 1, 10, 16] }])
  const akBytes = marshalTpm2bPublic(ak.public)
  const sig = Either.getOrThrow(parseSignature(q.signature))
  const rawSig = sig.alg === "ecdsa" ? Buffer.concat([sig.r, sig.s]) : Buffer.from(sig.sig)
  const opts = label === "ecc" ? { key: ak.publicKey, dsaEncoding: "ieee-p1363" as const } : { key: ak.publicKey, padding: constants.RSA_PKCS1_PADDING }
  const quoteOnce = () => Either.isRight(verifyQuoteString(akBytes, q.quote, q.nonce, { hashAlg: "sha256" }))
  const cryptoOnce = () => verify("sha256", q.attest, opts, rawSig)

  runFor(300, quoteOnce) // warm-up (also fills the AK key cache)
  runFor(300, cryptoOnce)
  const acc = { quote: { n: 0, t: 0 }, crypto: { n: 0, t: 0 } }
  for (let r = 0; r < ROUNDS; r++) {
    const first = r % 2 === 0
    for (const side of first ? (["quote", "crypto"] as const) : (["crypto", "quote"] as const)) {
      const res = runFor(ROUND_MS, side === "quote" ? quoteOnce : cryptoOnce)
      acc[side].n += res.n
      acc[side].t += res.elapsed
    }
  }
  const quotePerS = (acc.quote.n / acc.quote.t) * 1000
  const cryptoPerS = (acc.crypto.n / acc.crypto.t) * 1000
  const ratio = quotePerS / cryptoPerS
  console.log(
    `${label.toUpperCase().padEnd(3)} quote verify ${quotePerS.toFixed(0).padStart(7)}/s   crypto.verify ${cryptoPerS.toFixed(0).padStart(7)}/s   ratio ${ratio.toFixed(3)} (target >= 0.8)`
  )
  return { quotePerS, cryptoPerS, ratio }
}

const rsa = bench("rsa")
const ecc = bench("ecc")
console.log(`BENCH quote_verify_rsa_per_s ${rsa.quotePerS.toFixed(0)} 1/s`)
console.log(`BENCH crypto_verify_rsa_per_s ${rsa.cryptoPerS.toFixed(0)} 1/s`)
console.log(`BENCH quote_verify_rsa_ratio ${rsa.ratio.toFixed(3)}`)
console.log(`BENCH quote_verify_ecc_per_s ${ecc.quotePerS.toFixed(0)} 1/s`)
console.log(`BENCH crypto_verify_ecc_per_s ${ecc.cryptoPerS.toFixed(0)} 1/s`)
console.log(`BENCH quote_verify_ecc_ratio ${ecc.ratio.toFixed(3)}`)
