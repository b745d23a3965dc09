/**
 * What the fault suites share: a simulated pull agent whose machine records every IMA list it is
 * asked for, a seeded random source whose seed a failing test names (ATTEST_FAULT_SEED replays it),
 * and a verifier configuration for a spawned `attest verifier` on either backend.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { layer as agentLayer } from "../../src/agent/Agent.js"
import { rawRequest } from "../../src/http/client.js"
import { MeasurementSource } from "../../src/agent/measurements/MeasurementSource.js"
import { layer as machineLayer } from "../../src/agent/measurements/SimulatedMachine.js"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import type { DatabaseOptions } from "../../src/db/Sql.js"
import type { AkOptions } from "../../src/tpm/Tpm.js"

/** A simulated agent whose machine records (wall clock, entry) for every IMA list it is asked for. */
export const recordedAgent = (
  agentId: string,
  dir: string,
  caPem: string,
  options: { readonly ak?: AkOptions; readonly ekAlg?: "rsa" | "ecc" } = {}
) => {
  const asked: Array<{ readonly at: number; readonly entry: number }> = []
  const recording = Layer.effect(
    MeasurementSource,
    Effect.map(MeasurementSource, (inner) => ({
      ...inner,
      imaList: (from: number) => Effect.suspend(() => (asked.push({ at: Date.now(), entry: from }), inner.imaList(from)))
    }))
  )
  const layer = agentLayer({
    agentId,
    dataDir: dir,
    host: "127.0.0.1",
    port: 0,
    trustedClientCa: caPem,
    payload: { dir: join(dir, "secure"), extractZip: true },
    ...(options.ak === undefined ? {} : { ak: options.ak }),
    ...(options.ekAlg === undefined ? {} : { ekAlg: options.ekAlg })
  }).pipe(
    Layer.provide(recording),
    Layer.provideMerge(machineLayer({ name: agentId })),
    Layer.provideMerge(TpmSimulator.layer({ seed: `kill-${agentId}` })),
    Layer.provide(NodeHttpClient.layerUndici)
  )
  return { asked, layer }
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export const seededRandom = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The seed of this run: ATTEST_FAULT_SEED when set (to replay a failure), else a new one. */
export const faultSeed = (): number => {
  const given = process.env["ATTEST_FAULT_SEED"]
  return given !== undefined && given !== "" ? Number(given) : Math.floor(Math.random() * 2 ** 31)
}

/**
 * How many kill/restart rounds a fault suite runs: ATTEST_FAULT_ROUNDS when set (a longer soak),
 * else `fallback`. Each round is the same check at another random point; two already cover a
 * restart after a restart, more only add samples, at a restart of a real process each.
 */
export const faultRounds = (fallback: number): number => {
  const raw = process.env["ATTEST_FAULT_ROUNDS"]
  if (raw === undefined || raw === "") return fallback
  const given = Number(raw)
  if (!Number.isInteger(given) || given < 1) throw new Error(`ATTEST_FAULT_ROUNDS=${raw}: must be a whole number of rounds, 1 or more`)
  return given
}

/**
 * An `attest verifier` configuration file in `dir` (`<name>.toml`, default attest.toml): its CA, the
 * database given, a fixed port, no notifiers unless `extra` lines say otherwise.
 */
export const writeVerifierConfig = (
  dir: string,
  o: {
    readonly caDir: string
    readonly db: DatabaseOptions
    readonly port: number
    readonly quoteInterval: number
    readonly name?: string
    readonly extra?: ReadonlyArray<string>
    /** The metrics listener's port; default 0 (off). */
    readonly metricsPort?: number
  }
) => {
  const name = o.name ?? "attest"
  const file = join(dir, `${name}.toml`)
  writeFileSync(file, [
    "[verifier]",
    `port = ${o.port}`,
    `tls_dir = "${o.caDir}"`,
    `ca_dir = "${o.caDir}"`,
    `data_dir = "${o.db.data_dir === "" ? join(dir, o.name === undefined ? "verifier" : name) : o.db.data_dir}"`,
    `database_url = "${o.db.database_url}"`,
    `metrics_port = ${o.metricsPort ?? 0}`,
    `quote_interval = ${o.quoteInterval}`,
    ...(o.extra?.some((l) => l.startsWith("enabled_revocation_notifications")) ? [] : ["enabled_revocation_notifications = []"]),
    ...(o.extra ?? []),
    ""
  ].join("\n"))
  return file
}

/** An admin's HTTPS request to a verifier at `url` with the test CA's client certificate. */
export const verifierAdmin = (ca: { readonly caPem: string; readonly clientCert: string; readonly clientKey: string }) =>
(url: string, method: string, path: string, json?: unknown) =>
  rawRequest({
    method,
    baseUrl: url,
    path,
    tls: { ca: ca.caPem, cert: ca.clientCert, key: ca.clientKey },
    ...(json === undefined ? {} : { body: JSON.stringify(json), headers: { "content-type": "application/json" } })
  }).pipe(Effect.orDie)

/** A v2 agent status through `admin` (the fields the fault suites read). */
export const agentStatus = (admin: ReturnType<typeof verifierAdmin>, url: string, id: string) =>
  Effect.map(admin(url, "GET", `/v2.6/agents/${id}`), (r) =>
    JSON.parse(r.body).results as { operational_state: number; attestation_count: number; attestation_status?: string })
