/**
 * The pull round the evaluator benchmarks share (bench/evaluate.ts, bench/ops-overhead.ts): a
 * partial quote (PCR 10 and 16 of the sha256 bank, RSA-2048 RSASSA or ECC P-256 ECDSA AK), 5 new
 * IMA entries on a 10,000-entry stored state, a compiled runtime policy of 100,000 digests, the NK
 * binding and the clock check; and CPU-time loops (the machine is shared).
 */
import { createHash, generateKeyPairSync } from "node:crypto"
import { Either } from "effect"
import { decodeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { compilePolicy } from "../src/ima/policy.js"
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

export const STATE = 10_000
export const NEW = 5
export const POLICY = 100_000

// The machine is shared: CPU time of this process (user + system) is the one-core cost, wall time is not.
export const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** Runs f for `ms` of CPU time; returns the count and the CPU milliseconds spent. */
export const runFor = (ms: number, f: () => boolean): { n: number; elapsed: number } => {
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

const base = generate(0, STATE, "sha1")
const more = generate(STATE, STATE + NEW, "sha1", base.pcrs)
const runtimePolicy = Either.getOrThrow(compilePolicy(Either.getOrThrow(decodeRuntimePolicy(policyFor(POLICY, "sha1")))))
const nk = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "pem", type: "spki" }).toString()
const nonce = new Uint8Array(Buffer.from("BenchNonce0123456789", "ascii"))

/** One pull round for an AK of `label`, judged valid once (the state before it, the round, the policy). */
export const makeRound = (label: "rsa" | "ecc") => {
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
  return { ak, policy, prior, round, more, nonce, runtimePolicy }
}
