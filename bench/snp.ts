/**
 * SEV-SNP verifications per second through the verifier's entry point, `verifyTeeEvidence`, with the
 * VCEK chain cached (request validation, base64, report parse, TCB and chip id, P-384 signature,
 * freshness hash, claims), against one raw node:crypto P-384/SHA-384 verify of the same report with
 * the same key, in the same run. The report is built and signed with a test ARK → ASK → VCEK chain
 * (the real Milan report cannot pass freshness); the work per report is the same as for AMD's.
 * Wall-clock rates are the BENCH figures; the CPU-time ratio is printed too, since on a shared
 * machine it is the steadier measure of the work per verification.
 */
import { createPublicKey, verify } from "node:crypto"
import { performance } from "node:perf_hooks"
import { makeChainCache, verifyTeeEvidence } from "../src/tee/index.js"
import { parseSnpReport, SNP_SIGNED_SIZE } from "../src/tee/snp/report.js"
import { p1363Signature } from "../src/tee/snp/signature.js"
import { freshness, makeTestChain, requestData, signedReport } from "../test/tee/support.js"
import { Either } from "effect"

const ROUND_MS = 250
const ROUNDS = 12 // per side, interleaved

const runFor = (ms: number, f: () => boolean): { n: number; elapsed: number; cpu: number } => {
  const start = performance.now()
  const cpuStart = process.cpuUsage()
  let n = 0
  let elapsed = 0
  do {
    for (let i = 0; i < 8; i++) if (!f()) throw new Error("verification failed in the benchmark")
    n += 8
    elapsed = performance.now() - start
  } while (elapsed < ms)
  const cpu = process.cpuUsage(cpuStart)
  return { n, elapsed, cpu: (cpu.user + cpu.system) / 1000 }
}

const chain = makeTestChain()
const f = freshness()
const report = signedReport(chain, f)
const data = requestData(report, f, chain.vcekDer)
const options = { now: new Date(), roots: chain.roots, chainCache: makeChainCache() }
const vcekKey = createPublicKey(chain.vcekKey)
const sig = p1363Signature(Either.getOrThrow(parseSnpReport(report)))
if (typeof sig === "string") throw new Error(sig)

const snpOnce = () => verifyTeeEvidence(data, options).valid
const rawOnce = () => verify("sha384", report.subarray(0, SNP_SIGNED_SIZE), { key: vcekKey, dsaEncoding: "ieee-p1363" }, sig)

runFor(300, snpOnce) // warm-up (fills the chain cache)
runFor(300, rawOnce)
const acc = { snp: { n: 0, t: 0, cpu: 0 }, raw: { n: 0, t: 0, cpu: 0 } }
for (let r = 0; r < ROUNDS; r++) {
  for (const side of r % 2 === 0 ? (["snp", "raw"] as const) : (["raw", "snp"] as const)) {
    const res = runFor(ROUND_MS, side === "snp" ? snpOnce : rawOnce)
    acc[side].n += res.n
    acc[side].t += res.elapsed
    acc[side].cpu += res.cpu
  }
}
const snpPerS = (acc.snp.n / acc.snp.t) * 1000
const rawPerS = (acc.raw.n / acc.raw.t) * 1000
const cpuRatio = (acc.snp.n / acc.snp.cpu) / (acc.raw.n / acc.raw.cpu)
console.log(`node ${process.version}; chain cache entries: ${options.chainCache.size()}`)
console.log(`SNP verifyTeeEvidence ${snpPerS.toFixed(0)}/s   raw P-384 verify ${rawPerS.toFixed(0)}/s   ratio ${(snpPerS / rawPerS).toFixed(3)} (target >= 0.8)`)
console.log(`per CPU-second: SNP ${((acc.snp.n / acc.snp.cpu) * 1000).toFixed(0)}/s, raw ${((acc.raw.n / acc.raw.cpu) * 1000).toFixed(0)}/s, ratio ${cpuRatio.toFixed(3)}`)
console.log(`BENCH snp_verify_per_s ${snpPerS.toFixed(0)} verifications/s`)
console.log(`BENCH snp_raw_p384_verify_per_s ${rawPerS.toFixed(0)} verifications/s`)
console.log(`BENCH snp_verify_ratio ${(snpPerS / rawPerS).toFixed(3)}`)
console.log(`BENCH snp_verify_cpu_ratio ${cpuRatio.toFixed(3)}`)
