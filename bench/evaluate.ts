/**
 * evaluateEvidence per second for a typical pull round: a partial quote (PCR 10 and 16 of the sha256
 * bank, RSA-2048 RSASSA or ECC P-256 ECDSA AK), 5 new IMA entries on a 10,000-entry stored state, a
 * compiled runtime policy of 100,000 digests, the NK binding and the clock check. Baseline in the
 * same run: bare verifyQuoteString of the same quote (what the evaluator cannot avoid doing), and
 * that quote check followed by verifyIma of the same 5 entries (src/ima), so the evaluator's own
 * share shows (measured back to back: apart, the two run faster than together). Rounds of the
 * three are interleaved, and timed in CPU time of this process (the machine is shared).
 */
import { Either } from "effect"
import { verifyIma } from "../src/ima/verify.js"
import { verifyQuoteString } from "../src/tpm/verifyQuote.js"
import { evaluateEvidence } from "../src/verifier/index.js"
import { makeRound, NEW, POLICY, runFor, STATE } from "./_evaluateRound.js"

const ROUND_MS = 250
const ROUNDS = 9 // per side, interleaved: ~2 s each

console.log(`node ${process.version}; generating ${STATE + NEW} IMA entries and a ${POLICY}-digest policy…`)

const bench = (label: "rsa" | "ecc") => {
  const { more, nonce, policy, prior, round, runtimePolicy } = makeRound(label)
  const evaluateOnce = () => evaluateEvidence(round, policy, prior).failures.length === 0
  const quoteOnce = () => Either.isRight(verifyQuoteString(policy.ak, round.quote, nonce, { hashAlg: "sha256" }))
  const imaInput = { list: more.text, startEntry: STATE, state: prior.ima, policy: runtimePolicy, quotedPcr10: { sha256: more.pcrs.sha256 }, bootTime: 1_700_000_000 }
  const quoteImaOnce = () => quoteOnce() && verifyIma(imaInput).failures.length === 0
  const sides = { evaluate: evaluateOnce, quote: quoteOnce, quoteIma: quoteImaOnce }
  const acc = { evaluate: { n: 0, t: 0 }, quote: { n: 0, t: 0 }, quoteIma: { n: 0, t: 0 } }
  for (const f of Object.values(sides)) runFor(300, f)
  const orders = [["evaluate", "quote", "quoteIma"], ["quoteIma", "evaluate", "quote"], ["quote", "quoteIma", "evaluate"]] as const
  for (let r = 0; r < ROUNDS; r++) {
    for (const side of orders[r % 3]!) {
      const res = runFor(ROUND_MS, sides[side])
      acc[side].n += res.n
      acc[side].t += res.elapsed
    }
  }
  const us = (k: keyof typeof acc) => (acc[k].t * 1000) / acc[k].n
  const evaluatePerS = 1e6 / us("evaluate")
  const quotePerS = 1e6 / us("quote")
  const ratio = evaluatePerS / quotePerS
  console.log(
    `${label.toUpperCase().padEnd(3)} evaluateEvidence ${evaluatePerS.toFixed(0).padStart(6)}/s (${us("evaluate").toFixed(1)} µs CPU)   verifyQuoteString ${us("quote").toFixed(1)} µs   quote + verifyIma ${us("quoteIma").toFixed(1)} µs   evaluator's own ${(us("evaluate") - us("quoteIma")).toFixed(1)} µs   ratio to verifyQuoteString ${ratio.toFixed(3)}`
  )
  return { evaluatePerS, ratio, restUs: us("evaluate") - us("quoteIma") }
}

const rsa = bench("rsa")
const ecc = bench("ecc")
console.log(`(+${NEW} IMA entries on a ${STATE}-entry state, ${POLICY}-digest policy, partial quote of PCR 10 and 16; ratio = evaluate/s ÷ bare quote verify/s)`)
console.log(`BENCH evaluate_per_s ${rsa.evaluatePerS.toFixed(0)} 1/s`)
console.log(`BENCH evaluate_ratio_to_quote_verify ${rsa.ratio.toFixed(3)}`)
console.log(`BENCH evaluate_us ${(1e6 / rsa.evaluatePerS).toFixed(1)} us`)
console.log(`BENCH evaluate_ecc_per_s ${ecc.evaluatePerS.toFixed(0)} 1/s`)
console.log(`BENCH evaluate_ecc_ratio_to_quote_verify ${ecc.ratio.toFixed(3)}`)
console.log(`BENCH evaluate_own_us ${rsa.restUs.toFixed(1)} us`)
