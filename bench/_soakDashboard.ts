/**
 * The dashboard open on the fleet, for bench/soak.ts: `attest dashboard` as its own process reading
 * the verifier with the admin certificate (no registrar: its address answers nothing, and the page
 * shows it away), and in this process a client that does what the browser's page does (app.js):
 * loads the page and its assets, holds `/api/events` open, and on every `version` event fetches the
 * fleet view (`/api/overview`), and every fifth an agent's page.
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { attestCommand } from "./_verifierCommand.js"

export interface DashboardClientStats {
  events: number
  requests: number
  errors: number
  lastError: string
  /** The slowest request since the soak's trace last read it (ms). */
  slowestMs: number
}

const get = (base: string, path: string) =>
  new Promise<number>((resolve, reject) => {
    http.get(`${base}${path}`, { headers: { accept: "application/json" } }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode ?? 0))
    }).on("error", reject)
  })

/** Starts the dashboard and the client in the caller's scope; both end with it. */
export const openDashboard = (o: { readonly dir: string; readonly caDir: string; readonly verifierUrl: string; readonly agentIds: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const config = join(o.dir, "dashboard.toml")
    writeFileSync(config, ["[tenant]", `ca_dir = "${o.caDir}"`, `tls_dir = "default"`, ""].join("\n"))
    const child = spawn(process.execPath, attestCommand(["dashboard", "--config", config, "--verifier", o.verifierUrl, "--registrar", "https://127.0.0.1:9", "--port", "0", "--interval", "2"]), { stdio: ["ignore", "pipe", "inherit"] })
    const exited = new Promise<void>((r) => child.once("exit", () => r()))
    yield* Effect.addFinalizer(() => Effect.promise(() => (child.kill("SIGINT"), Promise.race([exited, new Promise<void>((r) => setTimeout(r, 5000))]))))
    const base = yield* Effect.async<string>((resume) => {
      let out = ""
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString()
        const m = /attest dashboard: (http:\/\/\S+)/.exec(out)
        if (m !== null) resume(Effect.succeed(m[1]!.replace(/\/$/, "")))
      })
      child.once("exit", (code) => resume(Effect.dieMessage(`attest dashboard exited (${code}): ${out}`)))
    })
    const stats: DashboardClientStats = { events: 0, requests: 0, errors: 0, lastError: "", slowestMs: 0 }
    const failed = (what: string) => {
      stats.errors++
      stats.lastError = what
    }
    const request = (path: string): Promise<void> => {
      stats.requests++
      const t0 = performance.now()
      const timed = () => (stats.slowestMs = Math.max(stats.slowestMs, performance.now() - t0))
      return get(base, path).finally(timed).then(
        (status) => status === 200 ? undefined : failed(`${path}: ${status}`),
        (e: Error) => failed(`${path}: ${e.message}`)
      )
    }
    for (const path of ["/", "/assets/style.css", "/assets/app.js", "/assets/pages.js", "/assets/dom.js", "/assets/table.js", "/assets/chart.js", "/api/overview"]) void request(path)
    // the live stream: one refresh per version event, as the page's refresh() (one at a time)
    let loading = false
    const stream = http.get(`${base}/api/events`, (res) => {
      let buffer = ""
      res.on("data", (d: Buffer) => {
        buffer += d.toString()
        let end = buffer.indexOf("\n\n")
        while (end >= 0) {
          if (buffer.slice(0, end).startsWith("event: version")) {
            stats.events++
            if (!loading) {
              loading = true
              const id = o.agentIds[stats.events % o.agentIds.length]
              const path = stats.events % 5 === 0 && id !== undefined ? `/api/agents/${encodeURIComponent(id)}` : "/api/overview"
              void request(path).finally(() => (loading = false))
            }
          }
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf("\n\n")
        }
      })
    }).on("error", (e) => failed(`/api/events: ${e.message}`))
    yield* Effect.addFinalizer(() => Effect.sync(() => stream.destroy()))
    return { url: base, pid: child.pid!, stats }
  })
