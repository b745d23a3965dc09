/**
 * A machine whose agent can restart without a reboot, for test/faults/agentRestart.test.ts and
 * test/faults/pushBetweenRequests.test.ts: a swtpm process and an IMA measurement list file (the
 * simulated machine's usual files measured) that outlive any agent process, a registrar that
 * trusts the swtpm's EK certificates and a verifier, as `attest` processes on SQLite; the agent's
 * `[agent]` lines that point it at them, and the verifier's database for reading what it stored.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Exit, Fiber, Layer } from "effect"
import { join } from "node:path"
import { defaultFiles } from "../../src/agent/measurements/SimulatedMachine.js"
import { SqlLive } from "../../src/db/Sql.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { testDatabase } from "../support/db.js"
import { freePort, startSwtpm } from "../support/swtpm.js"
import { waitFor as waitUntil } from "../verifier/pollerSupport.js"
import { REGISTRAR_READY, startComponent, VERIFIER_READY, writeRegistrarConfig } from "./components.js"
import { imaFile } from "./imaFile.js"
import { verifierAdmin, writeVerifierConfig } from "./support.js"

/** The v2 status fields the tests read. */
export interface Status {
  readonly operational_state: number
  readonly attestation_count: number
  readonly attestation_status?: string
  readonly last_event_id: string | null
  readonly last_event_message?: string
}

const sleep = (ms: number) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/** Started in the current scope (everything stops with it); `quoteInterval` in seconds. */
export const swtpmFleet = (quoteInterval: number) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-swtpm-fleet-")
    const ca = yield* makeTestCa(join(dir, "cv_ca"))
    const [registrarDb, verifierDb] = [yield* testDatabase("sqlite"), yield* testDatabase("sqlite")]
    const [registrarPort, registrarTlsPort, verifierPort, agentPort] = yield* Effect.promise(() => Promise.all([freePort(), freePort(), freePort(), freePort()]))
    const verifierUrl = `https://127.0.0.1:${verifierPort}`
    const verifierConfig = writeVerifierConfig(dir, {
      caDir: ca.dir,
      db: verifierDb,
      port: verifierPort,
      quoteInterval,
      // a fixed 1 s between retries, 60 of them: an agent back within a minute is never FAILED
      extra: ["retry_interval = 1", "exponential_backoff = false", "max_retries = 60", "request_timeout = 10"]
    })
    // the machine (its swtpm, its list) and the registrar that trusts its EK, while the verifier starts
    const machine = Effect.gen(function*() {
      // the agents use the RSA EK: no P-256 certificate to provision (its tool runs are seconds on a loaded machine)
      const swtpm = yield* Effect.acquireRelease(Effect.promise(() => startSwtpm({ p256EkCert: false })), (t) => Effect.promise(() => t.stop()))
      const ima = yield* Effect.promise(() => imaFile(swtpm, join(dir, "ascii_runtime_measurements")))
      for (const f of defaultFiles) yield* Effect.promise(() => ima.measure(f.path, f.content))
      const registrarConfig = writeRegistrarConfig(dir, { ca, db: registrarDb, port: registrarPort, tlsPort: registrarTlsPort, ekCas: [swtpm.rootCaPem, swtpm.issuerCaPem] })
      yield* startComponent(["registrar", "--config", registrarConfig], REGISTRAR_READY)
      return { swtpm, ima }
    })
    const [{ ima, swtpm }, verifier] = yield* Effect.all([machine, startComponent(["verifier", "--config", verifierConfig], VERIFIER_READY)], { concurrency: "unbounded" })
    const admin = verifierAdmin(ca)
    /** One agent's v2 status sampled every 200 ms to the end of the scope, and a wait (120 s at most) for a sample. */
    const watch = (agentId: string) =>
      Effect.gen(function*() {
        const samples: Array<{ readonly at: number; readonly status: Status }> = []
        const sampler = yield* Effect.fork(Effect.forever(Effect.zipRight(
          Effect.exit(Effect.timeout(admin(verifierUrl, "GET", `/v2.6/agents/${agentId}`), "5 seconds")).pipe(
            Effect.tap((e) => Exit.isSuccess(e) && e.value.status === 200 ? Effect.sync(() => void samples.push({ at: Date.now(), status: JSON.parse(e.value.body).results })) : Effect.void)
          ),
          sleep(200)
        )))
        yield* Effect.addFinalizer(() => Fiber.interrupt(sampler))
        const waitFor = (what: string, ok: (s: Status) => boolean) =>
          Effect.map(waitUntil(what, Effect.sync(() => samples[samples.length - 1]), (s) => s !== undefined && ok(s.status), 120_000), (s) => s!.status)
        return { samples, waitFor }
      })
    const sql = Context.get(yield* Layer.build(SqlLive(verifierDb, "verifier")).pipe(Effect.orDie), SqlClient.SqlClient)
    return {
      dir,
      ca,
      swtpm,
      ima,
      verifier,
      verifierUrl,
      admin,
      watch,
      registrarPort,
      registrarTlsPort,
      agentPort,
      /** The verifier's database (SQLite, read beside the running verifier). */
      sql,
      /** `[agent]` lines: this machine's list, no boot log (the swtpm had no firmware). */
      machineLines: [`ima_ml_path = "${ima.path}"`, `measuredboot_ml_path = "${join(dir, "no-boot-log")}"`],
      /** `attest` arguments after the configuration: the swtpm through tpm2-tools, this machine's measurements. */
      tpmArgs: ["--tpm", "tpm2-tools", "--tcti", swtpm.tcti, "--measurements", "system"],
      reboots: () => verifier.run.lines.filter((l) => /agent rebooted/.test(l.text)).length
    }
  })
