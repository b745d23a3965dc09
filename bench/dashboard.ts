/**
 * The dashboard's cost per sample with 1,000 and 10,000 agents: reading the verifier's bulk status
 * into records (agents.ts), recording the sample in the history (history.ts: events, series) and
 * building and serializing `/api/overview` (views.ts) — against the baseline every sample pays
 * anyway, fetching the same bulk JSON over loopback HTTP and JSON.parse-ing it. Every second
 * sample changes a tenth of the agents (attestations counted, some failing), as a live fleet does.
 *
 *   npm run bench -- dashboard
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import { agentsOfBulk } from "../src/dashboard/agents.js"
import { emptyHistory, recordSample } from "../src/dashboard/history.js"
import type { RegistrarEntry } from "../src/dashboard/registrarRecords.js"
import { overviewView, type Snapshot } from "../src/dashboard/views.js"

const status = (i: number, round: number) => {
  const changed = round % 2 === 1 && i % 10 === 0
  const failing = changed && i % 100 === 0
  return {
    operational_state: failing ? 9 : 3,
    v: null,
    ip: "10.0.0.1",
    port: 9002,
    tpm_policy: "{\"mask\": \"0x400\"}",
    meta_data: "{}",
    has_mb_refstate: 0,
    has_runtime_policy: 1,
    accept_tpm_hash_algs: ["sha512", "sha384", "sha256"],
    accept_tpm_encryption_algs: ["ecc", "rsa"],
    accept_tpm_signing_algs: ["ecschnorr", "rsassa"],
    hash_alg: "sha256",
    enc_alg: "rsa2048",
    sign_alg: "rsassa",
    verifier_id: "default",
    verifier_ip: "127.0.0.1",
    verifier_port: 8881,
    severity_level: failing ? 1 : null,
    last_event_id: failing ? "ima.validation.ima-ng.not_in_allowlist" : null,
    attestation_count: 100 + Math.floor(round / 2) + (changed ? 1 : 0),
    last_received_quote: 1_795_000_000 + round * 2,
    last_successful_attestation: 1_795_000_000 + round * 2,
    attestation_status: failing ? "FAIL" : "PASS",
    attestation_period: "2s",
    maximum_attestation_interval: "10s"
  }
}

const bulkJson = (n: number, round: number) => {
  const results: Record<string, unknown> = {}
  for (let i = 0; i < n; i++) results[`d432fbb3-d2f1-4a97-9ef7-${String(i).padStart(12, "0")}`] = status(i, round)
  return JSON.stringify({ code: 200, status: "Success", results })
}

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const fetchText = (agent: http.Agent, port: number, path: string) =>
  new Promise<string>((resolve, reject) => {
    http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    }).on("error", reject)
  })

const run = async (n: number) => {
  const bodies = [bulkJson(n, 0), bulkJson(n, 1)]
  const server = http.createServer((req, res) => {
    const body = bodies[Number(new URL(req.url!, "http://x").searchParams.get("round")) % 2]!
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const port = (server.address() as AddressInfo).port
  const agent = new http.Agent({ keepAlive: true })
  const history = emptyHistory()
  const registrar = new Map<string, RegistrarEntry>()
  const baseline: Array<number> = []
  const build: Array<number> = []
  let bytes = 0
  const rounds = n >= 10_000 ? 12 : 40
  for (let round = 0; round < rounds; round++) {
    let t = performance.now()
    const parsed = JSON.parse(await fetchText(agent, port, `/v2.6/agents/?bulk=true&round=${round}`)) as { results: unknown }
    const fetched = performance.now() - t
    t = performance.now()
    const agents = agentsOfBulk(parsed.results)
    recordSample(history, agents, 1_795_000_000_000 + round * 2000)
    const snapshot: Snapshot = {
      version: round,
      takenAt: round,
      verifier: { url: "https://127.0.0.1:8881", ok: true, error: null, failingSince: null },
      registrar: { url: "https://127.0.0.1:8891", ok: true, error: null, failingSince: null },
      agents,
      runtimePolicies: [],
      mbPolicies: [],
      registrarAgents: registrar
    }
    const text = JSON.stringify(overviewView(snapshot, history, 1_795_000_000_000 + round * 2000))
    const built = performance.now() - t
    bytes = text.length
    // the first rounds warm the JIT
    if (round >= 2) {
      baseline.push(fetched)
      build.push(built)
    }
  }
  agent.destroy()
  server.close()
  const b = median(baseline)
  const o = median(build)
  console.log(
    `${n} agents: overview build ${o.toFixed(1)} ms (records, history, view, JSON ${(bytes / 1024).toFixed(0)} KiB); ` +
      `baseline fetch + JSON.parse of the bulk (${(bodies[0]!.length / 1024).toFixed(0)} KiB) ${b.toFixed(1)} ms; ratio ${(o / b).toFixed(2)}x`
  )
  return { o, b }
}

const small = await run(1_000)
const large = await run(10_000)
console.log(`BENCH dashboard_overview_ms_1k ${small.o.toFixed(2)} ms`)
console.log(`BENCH dashboard_overview_ms_10k ${large.o.toFixed(2)} ms`)
console.log(`BENCH dashboard_overview_ratio_10k ${(large.o / large.b).toFixed(2)}`)
