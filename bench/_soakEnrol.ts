/**
 * The soak's enrolment (bench/soak.ts): both fleets' processes start at once with the fleet policy's
 * upload (the pull fleet makes its ECC AKs and listeners, the push fleet loads its agents' AKs, or
 * derives them on a first run, and enrols itself), then the pull agents are enrolled over v2 through keep-alive connections
 * (`concurrency` at a time: a fresh mTLS handshake per request cost the verifier and this process
 * more than the add itself). Every 10 s a line says how far it got and who had the CPU: the
 * verifier, each load generator, this process, and the load average (the machine is shared).
 */
import { spawn } from "node:child_process"
import * as https from "node:https"
import { loadavg } from "node:os"
import { Effect, Fiber, Schedule } from "effect"
import { type ClientTls, rawRequest } from "../src/http/client.js"
import { fleetAgentBody, fleetRuntimePolicy } from "./_fleet.js"
import { cpuMs } from "./_procCpu.js"
import type { DbProbe } from "./_soakProbe.js"

export interface PullFleet {
  readonly agents: ReadonlyArray<{ readonly id: string; readonly port: number; readonly ak: string }>
  readonly cert: string
}

/** A child process (killed with SIGKILL when the scope closes): its pid at once, `ready` once its output satisfies `parse`. */
const child = <A>(args: ReadonlyArray<string>, parse: (out: string) => A | undefined, env: NodeJS.ProcessEnv = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const c = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } })
      const exited = new Promise<void>((r) => c.once("exit", () => r()))
      const ready = new Promise<A>((resolve, reject) => {
        let out = ""
        let done = false
        c.stdout.on("data", (d: Buffer) => {
          if (done) return
          out += d.toString()
          const v = parse(out)
          if (v !== undefined) {
            done = true
            resolve(v)
          }
        })
        c.once("exit", (code) => done || reject(new Error(`${args.join(" ")} exited (${code}): ${out.slice(-2000)}`)))
      })
      return { pid: c.pid!, ready: Effect.orDie(Effect.tryPromise(() => ready)), kill: () => (c.kill("SIGKILL"), exited) }
    }),
    (c) => Effect.promise(c.kill)
  )

export interface EnrolOptions {
  readonly verifier: { readonly url: string; readonly pid: number; readonly tls: ClientTls }
  readonly caDir: string
  /** The push agents' AKs, kept between runs (bench/_pushFleet.ts). */
  readonly pushStateDir: string
  readonly pull: number
  readonly push: number
  readonly interval: number
  readonly concurrency: number
  readonly db: DbProbe
}

const pct = (ms: number, overMs: number) => `${((ms / Math.max(1, overMs)) * 100).toFixed(0)}%`

export const enrolFleets = (o: EnrolOptions) =>
  Effect.gen(function*() {
    const t0 = performance.now()
    // an idle pooled socket is dropped here (3 s) before the verifier drops it (keep_alive_timeout 5 s)
    const connections = new https.Agent({ keepAlive: true, maxSockets: o.concurrency, timeout: 3000 })
    yield* Effect.addFinalizer(() => Effect.sync(() => connections.destroy()))
    const send = (method: string, path: string, body: unknown) =>
      rawRequest({ method, baseUrl: o.verifier.url, path, agent: connections, tls: o.verifier.tls, body: JSON.stringify(body), headers: { "content-type": "application/json" } }).pipe(
        // full-scale runs on the loaded 2-core machine saw connections reset (ECONNRESET), six in a row once
        Effect.tapError((e) => Effect.sync(() => console.log(`soak: ${method} ${path}: ${e.message}; again in 2 s`))),
        Effect.retry({ times: 20, schedule: Schedule.spaced("2 seconds") }),
        Effect.orDie
      )

    const fleet = yield* child(["--import", "tsx", "bench/_fleet.ts", String(o.pull), o.caDir], (out) => {
      const line = out.split("\n").find((l) => l.startsWith("{"))
      return line === undefined || !out.includes(line + "\n") ? undefined : (JSON.parse(line) as PullFleet)
    }, { FLEET_AK: "ecc", FLEET_DROP_SEEN: "1" })
    const pushFleet = o.push === 0 ? undefined : yield* child(
      ["--import", "tsx", "bench/_pushFleet.ts", String(o.push), o.verifier.url, o.caDir, String(o.interval), o.pushStateDir],
      (out) => {
        const m = /\{"ready":(\d+)\}\n/.exec(out)
        return m === null ? undefined : Number(m[1])
      }
    )
    const pids = { verifier: o.verifier.pid, "pull fleet": fleet.pid, ...(pushFleet === undefined ? {} : { "push fleet": pushFleet.pid }), "this process": process.pid }
    const cpuOf = () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]))
    const cpu0 = cpuOf()
    let enrolled = 0

    let last = { at: t0, cpu: cpu0 }
    const progress = Effect.promise(async () => {
      const agents = await o.db.agents()
      const now = performance.now()
      const cpu = cpuOf()
      const push = agents.filter((a) => a.model === "push").length
      console.log(
        `enrolling, ${((now - t0) / 1000).toFixed(0)} s: pull ${enrolled}/${o.pull} enrolled, push ${push}/${o.push}, ${agents.filter((a) => a.lastSuccessMs > 0).length} attested; ` +
          `CPU over the last ${((now - last.at) / 1000).toFixed(0)} s: ${Object.keys(pids).map((k) => `${k} ${pct(cpu[k]! - last.cpu[k]!, now - last.at)}`).join(", ")}; load average ${loadavg()[0]!.toFixed(1)}`
      )
      last = { at: now, cpu }
    })
    const reporter = yield* Effect.fork(Effect.repeat(Effect.delay(progress, "10 seconds"), Schedule.forever))

    // the policy goes up while the fleets start
    const policy = yield* send("POST", "/v2.6/allowlists/fleet", { runtime_policy: Buffer.from(JSON.stringify(fleetRuntimePolicy())).toString("base64") })
    if (policy.status !== 201 && policy.status !== 200) return yield* Effect.dieMessage(`fleet policy: ${policy.status} ${policy.body}`)
    const pullFleet = yield* fleet.ready
    const listening = performance.now()
    const verifierBefore = cpuMs(o.verifier.pid)
    yield* Effect.forEach(pullFleet.agents, (a) =>
      Effect.flatMap(send("POST", `/v2.6/agents/${a.id}`, fleetAgentBody(a, pullFleet.cert)), (r) =>
        r.status === 200 ? Effect.sync(() => void enrolled++) : Effect.dieMessage(`enrolment of ${a.id}: ${r.status} ${r.body}`)), { concurrency: o.concurrency, discard: true })
    const pullDone = performance.now()
    const verifierPull = cpuMs(o.verifier.pid) - verifierBefore
    console.log(`pull fleet: ${o.pull} agents listening in ${((listening - t0) / 1000).toFixed(0)} s, enrolled in ${((pullDone - listening) / 1000).toFixed(0)} s more (${o.concurrency} at a time; verifier CPU meanwhile ${(verifierPull / 1000).toFixed(1)} s, its agents' attestations included)`)
    const pushReady = pushFleet === undefined ? 0 : yield* pushFleet.ready
    if (pushFleet !== undefined) console.log(`push fleet: ${pushReady}/${o.push} agents enrolled and attesting ${((performance.now() - t0) / 1000).toFixed(0)} s after the start`)
    yield* progress
    const seconds = (performance.now() - t0) / 1000
    const cpu = cpuOf()
    console.log(`enrolment: ${o.pull + pushReady} agents in ${seconds.toFixed(0)} s; CPU ${Object.keys(pids).map((k) => `${k} ${((cpu[k]! - cpu0[k]!) / 1000).toFixed(1)} s`).join(", ")}; load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}`)
    yield* Fiber.interrupt(reporter)
    return { fleet: { ...pullFleet, pid: fleet.pid }, pushPid: pushFleet?.pid, pushReady, seconds }
  })
