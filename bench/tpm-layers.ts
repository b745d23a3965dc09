/**
 * The two Tpm layers side by side: quote and certify latency of the in-memory simulator, and of
 * Tpm2Tools on a private swtpm. Baseline, measured in the same run: one bare `tpm2_quote` process
 * against the same swtpm with the AK already at a persistent handle (the floor any tpm2-tools
 * based agent pays), so the ratio shows what loading the saved AK context and flushing per call costs.
 *
 *   npm run bench -- tpm-layers [iterations]
 */
import { NodeContext } from "@effect/platform-node"
import { execFileSync } from "node:child_process"
import { Effect } from "effect"
import { makeSimulator } from "../src/tpm/simulator/Simulator.js"
import type { AkOptions, PcrSelection, TpmShape } from "../src/tpm/Tpm.js"
import { makeTpm2ToolsTpm } from "../src/tpm/tpm2tools/Tpm2ToolsTpm.js"
import { startSwtpm } from "../test/support/swtpm.js"

const iterations = Number(process.argv[2] ?? 20)
const selection: PcrSelection = [{ hash: "sha256", pcrs: [0, 1, 10, 16] }]
const nonce = new Uint8Array(Buffer.from("Ka8Qz2LmN4pR7tVx9Yb1"))
const RSA: AkOptions = { alg: "rsa", hash: "sha256", scheme: "rsassa" }
const ECC: AkOptions = { alg: "ecc", hash: "sha256", scheme: "ecdsa" }

const median = (xs: Array<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

const timeEach = async (n: number, f: () => Promise<unknown>): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await f()
    times.push(performance.now() - t)
  }
  return median(times)
}

const measure = (tpm: TpmShape, n: number) =>
  Effect.gen(function*() {
    const out: Record<string, number> = {}
    for (const [label, ek, options] of [["rsa", "rsa", RSA], ["ecc", "ecc", ECC]] as const) {
      const ak = yield* tpm.createAk(ek, options)
      yield* tpm.quote(ak, { nonce, selection }) // warm-up
      out[`quote_${label}`] = yield* Effect.promise(() => timeEach(n, () => Effect.runPromise(tpm.quote(ak, { nonce, selection }))))
      out[`certify_${label}`] = yield* Effect.promise(() => timeEach(n, () => Effect.runPromise(tpm.certify(ak, nonce))))
    }
    return out
  })

const main = async () => {
  const sim = await Effect.runPromise(
    Effect.scoped(Effect.flatMap(makeSimulator({ seed: "bench" }), (tpm) => measure(tpm, iterations * 10))).pipe(
      Effect.provide(NodeContext.layer)
    )
  )
  const swtpm = await startSwtpm({ p256EkCert: false })
  try {
    const tools = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(makeTpm2ToolsTpm({ tcti: swtpm.tcti }), (tpm) => measure(tpm, iterations))).pipe(
        Effect.provide(NodeContext.layer)
      )
    )
    // Baseline: the AK persistent at 0x81000100, one tpm2_quote process per quote.
    const dir = swtpm.stateDir
    await swtpm.tool("tpm2_createek", ["-c", "ek.ctx", "-G", "rsa"], dir)
    await swtpm.tool("tpm2_createak", ["-C", "ek.ctx", "-c", "ak.ctx", "-G", "rsa", "-g", "sha256", "-s", "rsassa"], dir)
    await swtpm.tool("tpm2_flushcontext", ["-t"], dir)
    await swtpm.tool("tpm2_evictcontrol", ["-C", "o", "-c", "ak.ctx", "0x81000100"], dir)
    await swtpm.tool("tpm2_flushcontext", ["-t"], dir)
    const env = { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti }
    const baseline = await timeEach(iterations, async () =>
      execFileSync("tpm2_quote", ["-c", "0x81000100", "-l", "sha256:0,1,10,16", "-q", Buffer.from(nonce).toString("hex"), "-g", "sha256",
        "-m", "q.attest", "-s", "q.sig", "-o", "q.pcrs"], { cwd: dir, env, stdio: "ignore" }))

    const f = (ms: number) => ms.toFixed(ms < 1 ? 3 : 1)
    console.log(`iterations: simulator ${iterations * 10}, swtpm ${iterations} (medians, ms)`)
    console.log("operation        simulator   tpm2-tools/swtpm")
    for (const k of Object.keys(sim)) console.log(`${k.padEnd(16)} ${f(sim[k]!).padStart(9)}   ${f(tools[k]!).padStart(9)}`)
    console.log(`baseline: bare tpm2_quote, persistent RSA AK: ${f(baseline)} ms`)
    console.log(`ratio Tpm2Tools quote (saved AK context + flushes) / baseline: ${(tools["quote_rsa"]! / baseline).toFixed(2)}x`)
    console.log(`ratio simulator quote / baseline: ${(sim["quote_rsa"]! / baseline).toFixed(4)}x`)
    for (const k of Object.keys(sim)) console.log(`BENCH sim_${k}_ms ${f(sim[k]!)} ms`)
    for (const k of Object.keys(tools)) console.log(`BENCH tpm2tools_${k}_ms ${f(tools[k]!)} ms`)
    console.log(`BENCH baseline_tpm2_quote_ms ${f(baseline)} ms`)
    console.log(`BENCH tpm2tools_quote_vs_baseline ${(tools["quote_rsa"]! / baseline).toFixed(2)} x`)
  } finally {
    await swtpm.stop()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
