/**
 * `attest dashboard` as users run it: the bundled executable (dist/cli/attest.js, bundled when
 * older than the sources) started as a child process with `[tenant]` from the environment
 * (tls_dir = the test CA's directory, whose admin certificate both servers trust), against a
 * running registrar and verifier: it prints its URL, serves the page's assets from the bundle and
 * the fleet's JSON. Also a refused `--verifier` given over plain HTTP (exit 1, one line).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { resolve } from "node:path"
import { runAttest } from "../support/cli.js"
import { getJson, makeTestPki, removePki, startDashboard, startFleet } from "./harness.js"

const root = resolve(__dirname, "../..")
const pki = makeTestPki()
afterAll(() => removePki(pki))

const A = "d432fbb3-d2f1-4a97-9ef7-75bd81c0c001"

const node = (...args: Array<string>) =>
  new Promise<number | null>((done, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: "inherit" })
    child.once("error", reject)
    child.once("close", done)
  })

describe("attest dashboard (bundled executable)", () => {
  beforeAll(async () => {
    if ((await node("scripts/build-if-needed.mjs")) !== 0) throw new Error("bundling failed")
  }, 300_000)

  it.scopedLive("prints its URL and serves the page and the fleet from the bundle", () =>
    Effect.gen(function*() {
      const fleet = yield* startFleet(pki, { intervalMs: 60_000 })
      yield* fleet.addToVerifier(A)
      yield* fleet.register(A)
      const { url } = yield* startDashboard(
        ["--port", "0", "--verifier", fleet.verifier.url, "--registrar", fleet.registrarHttps, "--interval", "1"],
        { ATTEST_TENANT_TLS_DIR: pki.dir }
      )
      const page = yield* getJson(url)
      expect(page.status).toBe(200)
      expect(page.text).toContain(`<script type="module" src="/assets/app.js">`)
      for (const asset of ["app.js", "pages.js", "table.js", "chart.js", "dom.js", "style.css"]) {
        expect({ asset, status: (yield* getJson(`${url}assets/${asset}`)).status }).toEqual({ asset, status: 200 })
      }
      const overview = yield* getJson(`${url}api/overview`)
      expect(overview.json.services.verifier.ok).toBe(true)
      expect(overview.json.counts.agents).toBe(1)
      const registrar = yield* getJson(`${url}api/registrar`)
      expect(registrar.json.counts).toEqual({ registered: 1, active: 1 })
    }), 300_000)

  it.effect("refuses a verifier address that is not https, in one line", () =>
    Effect.gen(function*() {
      const r = yield* runAttest("dashboard", "--verifier", "http://127.0.0.1:8881")
      expect(r.ok).toBe(false)
      expect(r.stderr).toBe("attest dashboard: --verifier http://127.0.0.1:8881: the verifier is reached over HTTPS only (https://host:port)")
    }), 60_000)
})
