/**
 * Issue 22 §1: anyone may POST verify/evidence, and its policies were parsed and compiled on the
 * event loop that serves the agents: four clients with large policies starved attestation. Here a
 * verifier (both API families, real HTTPS) serves push agents attesting every second while four
 * clients in another process post verify/evidence with a 100,000-digest runtime policy each (a new
 * policy per request: no cache helps). The agents' attestations in the flood window stay close to
 * those of the same window without it (a generous margin: the machine is shared; the 10 % figure
 * is bench/public-flood.ts's), no agent times out, the full queue answers 503 with Retry-After, and
 * a body over verify_evidence_max_body_size is 413 in the envelope.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Ref } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { attestOnce, enrol, openSession, pushVerifier, PushTestEnv, simulatedAgent } from "../push/support.js"
import { floodBody } from "./floodBody.js"
import { backends, record } from "./support.js"

const WINDOW_S = 8
const CLIENTS = 4
const MAX_BODY = 16 * 1024 * 1024

/** Runs the flood clients; `onStart` when they begin. Their answers by status. */
const runFlood = (url: string, caFile: string, bodyFile: string, onStart: () => void) =>
  Effect.async<{ statuses: Record<string, number>; retryAfterMissing: number }>((resume) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/verifier/floodClients.ts", url, caFile, bodyFile, String(CLIENTS), String(WINDOW_S)], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (d: Buffer) => {
      if (out === "" && d.toString().startsWith("start")) onStart()
      out += d.toString()
    })
    child.once("exit", (code) => resume(code === 0 ? Effect.succeed(JSON.parse(out.slice(out.indexOf("\n") + 1))) : Effect.dieMessage(`flood clients exited ${code}: ${out}`)))
  })

describe.each(backends)("verify/evidence flood while push agents attest, on %s", (backend, available) => {
  it.scopedLive.skipIf(!available)("attestations keep their pace, no agent times out, a full queue is 503 with Retry-After, an over-limit body 413", () =>
    Effect.gen(function*() {
      const work = yield* Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "attest-flood-"))), (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true })))
      // the server's limit as `attest verifier` sets it (max_upload_size, for admin policy uploads)
      const ctx = yield* Layer.build(pushVerifier(backend, { quote_interval: 1, verify_workers: 1, verify_queue_size: 2, verify_evidence_max_body_size: MAX_BODY }, { maxBodyBytes: 104_857_600 }))
      const env = Context.get(ctx, PushTestEnv)
      const caFile = join(work, "ca.pem")
      const bodyFile = join(work, "flood.json")
      writeFileSync(caFile, env.ca)
      writeFileSync(bodyFile, floodBody(100_000))

      // the workers start with the first request: before anything is measured
      const small = JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body)
      const first = yield* env.request("POST", "/v2.6/verify/evidence", { body: small, contentType: "application/json" })
      expect([first.status, first.json?.results?.valid]).toEqual([200, true])

      // over the limit: refused before it is read, in the envelope
      const big = yield* env.request("POST", "/v2.6/verify/evidence", { body: "x".repeat(MAX_BODY + 1), contentType: "application/json" })
      expect([big.status, big.json]).toEqual([413, { code: 413, status: `Request body exceeds the limit of ${MAX_BODY} bytes`, results: {} }])

      // three push agents attest every second for both windows
      const passes = yield* Ref.make(0)
      const agentIds = [0, 1, 2].map((i) => `d432fbb3-d2f1-4a97-9ef7-75bd81c0f10${i}`)
      const attesting = yield* Effect.forkScoped(Effect.forEach(agentIds, (id, i) =>
        Effect.gen(function*() {
          yield* enrol(id)
          const { token } = yield* openSession(id)
          for (;;) {
            const r = yield* attestOnce(id, token!)
            if (r.submitted?.status === 202) yield* Ref.update(passes, (n) => n + 1)
            yield* Effect.sleep(Duration.millis(1050))
          }
        }).pipe(Effect.provide(simulatedAgent(`flood-machine-${i}`)), Effect.provide(ctx)), { concurrency: "unbounded", discard: true }))

      // each agent attested once: then the quiet window, then the flood window
      while ((yield* Ref.get(passes)) < agentIds.length) yield* Effect.sleep("100 millis")
      /** Attestations per second from `start` on. */
      const rateSince = (start: { readonly passes: number; readonly at: number }) =>
        Effect.map(Ref.get(passes), (n) => (n - start.passes) / ((performance.now() - start.at) / 1000))
      const quietStart = { passes: yield* Ref.get(passes), at: performance.now() }
      yield* Effect.sleep(Duration.seconds(WINDOW_S))
      const quiet = yield* rateSince(quietStart)
      let floodStart = { passes: 0, at: 0 }
      const flood = yield* runFlood(env.url, caFile, bodyFile, () => (floodStart = { passes: Effect.runSync(Ref.get(passes)), at: performance.now() }))
      const during = yield* rateSince(floodStart)
      yield* Fiber.interrupt(attesting)

      // figures for a failing run's log
      yield* Effect.logInfo(`flood: ${JSON.stringify({ quiet, during, flood })}`)
      // the flood was served where there was room and refused at once where there was none
      expect(flood.statuses["200"] ?? 0).toBeGreaterThan(0)
      expect(flood.statuses["503"] ?? 0).toBeGreaterThan(0)
      expect(flood.retryAfterMissing).toEqual(0)
      // the agents' pace (a generous margin on a shared machine; the flood cut it by more than half before)
      expect({ quiet, during, kept: during >= quiet * 0.7 }).toEqual({ quiet, during, kept: true })
      const agents = Context.get(ctx, Agents)
      const states = yield* Effect.forEach(agentIds, (id) =>
        Effect.map(Effect.orDie(agents.show(id, { major: 2, minor: 6 })), (v) => ("attestation_status" in v ? v.attestation_status : undefined)))
      expect(states).toEqual(agentIds.map(() => "PASS"))
    }), { timeout: 180_000 })
})
