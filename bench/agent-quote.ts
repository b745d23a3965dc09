/**
 * Integrity quotes served per second by one pull agent over HTTPS with keep-alive (TPM simulator,
 * RSA-2048 AK, client certificate), with an IMA list of 10,000 entries polled incrementally: between
 * quotes the machine measures 10 new files and the client asks from the entry it had reached, as the
 * verifier does. Only the request round trips are timed. Baseline in the same run: raw RSA-2048
 * PKCS#1 v1.5 signatures per second with node:crypto (a quote costs at least one such signature).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { createSign, generateKeyPairSync } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { layer as agentLayer, RunningAgent } from "../src/agent/Agent.js"
import { layer as machineLayer, SimulatedMachine } from "../src/agent/measurements/SimulatedMachine.js"
import { initCa } from "../src/pki/ca.js"
import { TpmSimulator } from "../src/tpm/simulator/TpmSimulator.js"

const ENTRIES = 10_000
const PER_QUOTE = 10
const QUOTES = Number(process.argv[2] ?? 300)
const nonce = "Ka8Qz2LmN4pR7tVx9Yb1"

const dir = mkdtempSync(join(tmpdir(), "attest-bench-agent-"))
const caDir = join(dir, "ca")

const program = Effect.gen(function*() {
  yield* initCa({ dir: caDir })
  const read = (f: string) => readFileSync(join(caDir, f), "utf8")
  const scope = yield* Scope.make()
  const t0 = performance.now()
  const ctx = yield* Layer.buildWithScope(
    agentLayer({
      agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00000",
      dataDir: join(dir, "agent"),
      host: "127.0.0.1",
      port: 0,
      trustedClientCa: read("cacert.crt"),
      payload: { dir: join(dir, "agent", "secure"), extractZip: false }
    }).pipe(
      Layer.provideMerge(machineLayer({ name: "bench", extraEntries: ENTRIES - 6 })),
      Layer.provideMerge(TpmSimulator.layer({ seed: "bench-agent" })),
      Layer.provide(NodeHttpClient.layerUndici)
    ),
    scope
  )
  const agent = Context.get(ctx, RunningAgent)
  const machine = Context.get(ctx, SimulatedMachine)
  console.log(`agent up with ${yield* machine.entries} IMA entries in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

  const pool = new https.Agent({
    keepAlive: true,
    maxSockets: 1,
    ca: agent.serverCert,
    cert: read("client-cert.crt"),
    key: read("client-private.pem"),
    checkServerIdentity: () => undefined
  })
  const get = (path: string) =>
    Effect.async<{ ima_measurement_list: string; ima_measurement_list_entry: number }, Error>((resume) => {
      https.get(`${agent.url}${path}`, { agent: pool }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c) => chunks.push(c))
        res.on("end", () => resume(Effect.succeed(JSON.parse(Buffer.concat(chunks).toString("utf8")).results)))
      }).on("error", (e) => resume(Effect.fail(e)))
    })

  // first poll: the whole list (not timed: a verifier does it once per agent)
  const first = yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=0&ima_ml_entry=0`)
  let entry = first.ima_measurement_list.split("\n").length - 1
  let timed = 0
  let lines = 0
  for (let q = 0; q < QUOTES; q++) {
    for (let i = 0; i < PER_QUOTE; i++) yield* machine.measure(`/usr/bin/tool-${q}-${i}`, `content ${q} ${i}`)
    const s = performance.now()
    const r = yield* get(`/v2.5/quotes/integrity?nonce=${nonce}&mask=0x400&partial=1&ima_ml_entry=${entry}`)
    timed += performance.now() - s
    const n = r.ima_measurement_list.split("\n").length - 1
    if (r.ima_measurement_list_entry !== entry || n !== PER_QUOTE) throw new Error(`unexpected slice: entry ${r.ima_measurement_list_entry}, ${n} lines`)
    entry += n
    lines += n
  }
  pool.destroy()
  yield* Scope.close(scope, Exit.void)
  return { quotesPerS: QUOTES / (timed / 1000), meanMs: timed / QUOTES, lines }
})

const rsaBaseline = () => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const data = Buffer.alloc(133, 7) // a TPMS_ATTEST-sized message
  for (let i = 0; i < 20; i++) createSign("sha256").update(data).sign(privateKey)
  const n = 300
  const s = performance.now()
  for (let i = 0; i < n; i++) createSign("sha256").update(data).sign(privateKey)
  return n / ((performance.now() - s) / 1000)
}

const main = async () => {
  try {
    const before = rsaBaseline()
    const result = await Effect.runPromise(program)
    const after = rsaBaseline()
    const rsa = (before + after) / 2
    console.log(`integrity quotes: ${QUOTES} over one keep-alive HTTPS connection, ${PER_QUOTE} new IMA entries each (list ${ENTRIES} → ${ENTRIES + result.lines})`)
    console.log(`  ${result.quotesPerS.toFixed(1)} quotes/s, mean ${result.meanMs.toFixed(2)} ms per quote`)
    console.log(`baseline: raw RSA-2048 signatures (node:crypto): ${rsa.toFixed(1)}/s (before ${before.toFixed(1)}, after ${after.toFixed(1)})`)
    console.log(`ratio quotes/s to RSA signatures/s: ${(result.quotesPerS / rsa).toFixed(3)}`)
    console.log(`BENCH agent_quotes_per_s ${result.quotesPerS.toFixed(1)} quotes/s`)
    console.log(`BENCH agent_quote_ratio ${(result.quotesPerS / rsa).toFixed(3)}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
