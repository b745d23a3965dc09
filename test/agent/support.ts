/** Helpers for the agent suites: a server-components CA in a temp dir and an HTTPS client with its admin certificate. */
import * as https from "node:https"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { type AgentOptions, layer as agentLayer, RunningAgent } from "../../src/agent/Agent.js"
import { layer as machineLayer, type SimulatedMachineOptions } from "../../src/agent/measurements/SimulatedMachine.js"
import { initCa } from "../../src/pki/ca.js"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"

export interface TestCa {
  readonly dir: string
  readonly caPem: string
  readonly clientCert: string
  readonly clientKey: string
}

export const makeTestCa = (dir: string) =>
  initCa({ dir }).pipe(
    Effect.map((): TestCa => ({
      dir,
      caPem: readFileSync(join(dir, "cacert.crt"), "utf8"),
      clientCert: readFileSync(join(dir, "client-cert.crt"), "utf8"),
      clientKey: readFileSync(join(dir, "client-private.pem"), "utf8")
    })),
    Effect.orDie
  )

export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

export interface Reply {
  readonly status: number
  readonly body: { code: number; status: string; results: any }
}

export interface ClientIdentity {
  readonly cert?: string
  readonly key?: string
}

const agentPool = new Map<string, https.Agent>()

/** One HTTPS request to the agent; trusts exactly the agent's own certificate (as Keylime pins mtls_cert). */
export const request = (
  agent: { readonly url: string; readonly serverCert: string },
  client: ClientIdentity,
  method: string,
  path: string,
  body?: unknown
) =>
  Effect.async<Reply, Error>((resume) => {
    const key = `${agent.url}|${client.cert ?? "none"}`
    let pool = agentPool.get(key)
    if (pool === undefined) {
      pool = new https.Agent({ keepAlive: true, ca: agent.serverCert, ...(client.cert ? { cert: client.cert, key: client.key } : {}), checkServerIdentity: () => undefined })
      agentPool.set(key, pool)
    }
    const data = body === undefined ? undefined : JSON.stringify(body)
    const req = https.request(`${agent.url}${path}`, {
      method,
      agent: pool,
      headers: data === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(data) }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        try {
          resume(Effect.succeed({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
        } catch {
          resume(Effect.fail(new Error(`not JSON (${res.statusCode}): ${text}`)))
        }
      })
    })
    req.on("error", (e) => resume(Effect.fail(e)))
    if (data !== undefined) req.write(data)
    req.end()
  })

export const closeClients = () => {
  for (const a of agentPool.values()) a.destroy()
  agentPool.clear()
}

/** An agent on a simulated TPM and a simulated machine; registers when `registrarUrl` is given. */
export const simulatedAgentLayer = (
  options: Omit<AgentOptions, "host" | "port" | "payload"> & Partial<Pick<AgentOptions, "payload">>,
  machine: SimulatedMachineOptions,
  tpm: { readonly seed?: string; readonly stateFile?: string } = {}
) =>
  agentLayer({
    host: "127.0.0.1",
    port: 0,
    payload: options.payload ?? { dir: join(options.dataDir, "secure"), extractZip: true },
    ...options
  }).pipe(
    Layer.provideMerge(machineLayer(machine)),
    Layer.provideMerge(TpmSimulator.layer(tpm)),
    Layer.provide(NodeHttpClient.layerUndici)
  )

export { RunningAgent }
