/**
 * evaluateEvidence per second for a typical pull round: a partial quote (PCR 10 and 16 of the sha256
 * bank, RSA-2048 RSASSA or ECC P-256 ECDSA AK), 5 new IMA entries on a 10,000-entry stored state, a
 * compiled runtime policy of 100,000 digests, the NK binding and the clock check. Baseline in the
 * same run: bare verifyQuoteString of the same quote (what the evaluator cannot avoid doing), and
 * that quote check followed by verifyIma of the same 5 entries (src/ima), so the evaluator's own
 * share shows (measured back to back: apart, the two run faster than together). Rounds of the
 * three are interleaved, and timed in CPU time of this process (the machine is shared).
 */
import { createHash, generateKeyPairSync } from "node:crypto"
import { Either } from "effect"
import { decodeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { compilePolicy } from "../src/ima/policy.js"
import { verifyIma } from "../src/ima/verify.js"
import { verifyQuoteString } from "../src/tpm/verifyQuote.js"
import { marshalAttest } from "../src/tpm/attest.js"
import { TPM_GENERATED_VALUE } from "../src/tpm/constants.js"
import { marshalPcrBlob } from "../src/tpm/pcrBlob.js"
import { marshalTpm2bPublic, nameOf } from "../src/tpm/public.js"
import { encodeQuoteString } from "../src/tpm/quoteString.js"
import { marshalSignature } from "../src/tpm/signature.js"
import {
  type AgentPolicy,
  defaultSeverityPolicy,
  evaluateEvidence,
  type EvaluationState,
  initialEvaluationState,
  nkPcrValue,
  parseTpmPolicy,
  type TpmEvidence
} from "../src/verifier/index.js"
import { makeAk, signAttest, type TestAk } from "../test/tpm/quoteFixture.js"
import { generate, policyFor } from "./_imaGen.js"

const STATE = 10_000
const NEW = 5
const POLICY = 100_000
const ROUND_MS = 250
const ROUNDS = 9 // per side, interleaved: ~2 s each

// The machine is shared: CPU time of this process (user + system) is the one-core cost, wall time is not.
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** Runs f for `ms` of CPU time; returns the count and the CPU milliseconds spent. */
const runFor = (ms: number, f: () => boolean): { n: number; elapsed: number } => {
  const start = cpuMs()
  let n = 0
  let elapsed = 0
  do {
    for (let i = 0; i < 16; i++) if (!f()) throw new Error("verification failed in the benchmark")
    n += 16
    elapsed = cpuMs() - start
  } while (elapsed < ms)
  return { n, elapsed }
}

const quoteOver = (ak: TestAk, nonce: Uint8Array, values: ReadonlyMap<number, Uint8Array>, clock: bigint): string => {
  const pcrs = [...values.keys()].sort((a, b) => a - b)
  const h = createHash("sha256")
  for (const p of pcrs) h.update(values.get(p)!)
  const sel = [{ hash: "sha256" as const, pcrs, sizeofSelect: 3 }]
  const attest = marshalAttest({
    magic: TPM_GENERATED_VALUE,
    type: "quote",
    qualifiedSigner: nameOf(ak.public),
    extraData: nonce,
    clockInfo: { clock, resetCount: 3, restartCount: 0, safe: true },
    firmwareVersion: 1n,
    attested: { pcrSelect: sel, pcrDigest: new Uint8Array(h.digest()) }
  })
  const signature = marshalSignature(signAttest(ak, attest))
  const pcrBlob = marshalPcrBlob({ selection: sel, values: [{ hash: "sha256", values }] })
  return encodeQuoteString({ attest, signature, pcrBlob })
}

console.log(`node ${process.version}; generating ${STATE + NEW} IMA entries and a ${POLICY}-digest policy…`)
const base = generate(0, STATE, "sha1")
const more = generate(STATE, STATE + NEW, "sha1", base.pcrs)
const runtimePolicy = Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(policyFor(POLICY, "sha1")))))
const nk = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "pem", type: "spki" }).toString()
const nonce = new Uint8Array(Buffer.from("BenchNonce0123456789", "ascii"))

const bench = (label: "rsa" | "ecc") => {
  const ak = makeAk(label)
  const policy: AgentPolicy = {
    ak: marshalTpm2bPublic(ak.public),
    accept: { hash: ["sha512", "sha384", "sha256"], encryption: ["ecc", "rsa"], signing: ["ecschnorr", "rsassa", "ecdsa"] },
    tpmPolicy: Either.getOrThrow(parseTpmPolicy(`{"mask": "0x400"}`)),
    runtimePolicy,
    options: { severity: defaultSeverityPolicy, measuredBootEvaluate: "once", reportTomtou: false, bindNk: true, checkClock: true }
  }
  const answer = (pcr10: Uint8Array, clock: bigint, list: string, entry: number, full: boolean): TpmEvidence => ({
    _tag: "tpm",
    nonce,
    quote: quoteOver(ak, nonce, new Map([[10, pcr10], [16, new Uint8Array(nkPcrValue("sha256", nk))]]), clock),
    hash_alg: "sha256",
    enc_alg: label,
    sign_alg: ak.scheme,
    boottime: 1_700_000_000,
    ...(full ? { pubkey: nk } : {}),
    ima_measurement_list: list,
    ima_measurement_list_entry: entry
  })
  // The stored state after the first STATE entries (one full round).
  const first = evaluateEvidence(answer(base.pcrs.sha256, 1000n, base.text, 0, true), policy, initialEvaluationState)
  if (first.failures.length > 0) throw new Error(`setup round failed: ${JSON.stringify(first.failures)}`)
  const prior: EvaluationState = first.nextState
  const round = answer(more.pcrs.sha256, 2000n, more.text, STATE, false)
  const check = evaluateEvidence(round, policy, prior)
  if (check.failures.length > 0 || check.nextState.ima.nextEntry !== STATE + NEW) throw new Error(`bench round failed: ${JSON.stringify(check.failures)}`)

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
