/**
 * The dashboard of a running `attest up` fleet in headless Chromium, as an operator meets it: the
 * overview lists every agent, two pull and one push; agent 2's and the push agent's machines are
 * tampered with (`--tamper 2 --tamper 3`: each runs an executable its policy does not allow once it
 * has attested) and the page shows them turn failed, with the failure type, without a reload;
 * agent 2's page names the file; the push agent's shows its model, no address, its acceptance,
 * its latest verdict and failure, and a timeline of its attestations with the failed one.
 * Screenshots are kept in test-results/dashboard/.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import type { Browser } from "playwright-core"
import { startAttest } from "../support/attestProcess.js"
import { launchChromium } from "../support/chromium.js"
import { needsChromium } from "../support/requirements.js"

const available = needsChromium()
const shots = resolve(__dirname, "../../test-results/dashboard")
let browser: Browser | undefined

beforeAll(async () => {
  if (!available) return
  mkdirSync(shots, { recursive: true })
  browser = await launchChromium()
}, 180_000)
afterAll(async () => {
  await browser?.close()
})

/** Generous bounds: a loaded machine (two cores, several suites) renders slowly. */
const WAIT = { timeout: 90_000 }

describe.skipIf(!available)("dashboard of attest up", () => {
  it.live("shows every agent, and a tampered one failing with its type, live", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-up-dashboard-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const up = startAttest([
        "up", "--data-dir", join(dir, ".attest"), "--agents", "2", "--push", "1", "--tamper", "2", "--tamper", "3",
        "--registrar-port", "0", "--registrar-tls-port", "0", "--verifier-port", "0", "--agent-port", "0",
        "--metrics-port", "0", "--verifier-metrics-port", "0", "--dashboard-port", "0"
      ])
      yield* Effect.addFinalizer(() => Effect.promise(() => up.stop()))
      const dashboard = yield* Effect.promise(() => up.waitFor(/^dashboard  (http:\/\/\S+)/, 180_000))
      const url = /^dashboard  (http:\/\/\S+)/.exec(dashboard.text)![1]!
      yield* Effect.promise(() => up.waitFor(/^ready: 2 of 2 agents enrolled at the verifier and 1 of 1 push agents/, 180_000))
      const id = (n: number) => {
        const line = up.lines.find((l) => new RegExp(`^agent ${n}  \\S+  (registered and activated|push agent started)`).test(l.text))!
        return line.text.split(/\s+/)[2]!
      }
      const ids = [id(1), id(2), id(3)]

      yield* Effect.promise(async () => {
        const context = await browser!.newContext({ viewport: { width: 1366, height: 800 } })
        try {
          const page = await context.newPage()
          const pageErrors: Array<string> = []
          page.on("pageerror", (e) => pageErrors.push(e.message))
          await page.goto(url, WAIT)
          await page.getByTestId("count-agents").filter({ hasText: "3" }).waitFor(WAIT)
          const rows = await page.locator('[data-testid="agents-table"] tbody tr[data-row]').evaluateAll((rs) => rs.map((r) => r.getAttribute("data-row")))
          expect([...rows].sort()).toEqual([...ids].sort())
          // the tampered agents turn failed on the open page, with the IMA failure type in their rows
          await page.getByTestId("count-fail").filter({ hasText: "2" }).waitFor(WAIT)
          const pushRow = page.locator(`[data-testid="agents-table"] tr[data-row="${ids[2]}"]`)
          await pushRow.filter({ hasText: "policy_violation: ima.validation.ima-ng.not_in_allowlist" }).waitFor(WAIT)
          const pushCells = await pushRow.locator("td").allTextContents()
          expect([pushCells[1], pushCells[3], pushCells[4], pushCells[8]]).toEqual(["push", "FAIL (push)", "fail", "none (push)"])
          const row = page.locator(`[data-testid="agents-table"] tr[data-row="${ids[1]}"]`)
          await row.filter({ hasText: "ima.validation.ima-ng.not_in_allowlist" }).waitFor(WAIT)
          await page.screenshot({ path: join(shots, "up-overview-tampered.png"), fullPage: true })
          // its page: state, the failure with what it said (the file), the timeline
          await row.click()
          await page.getByTestId("agent-id").filter({ hasText: ids[1]! }).waitFor(WAIT)
          await page.getByTestId("agent-identity").filter({ hasText: "Invalid Quote" }).waitFor(WAIT)
          expect(await page.getByTestId("agent-identity").textContent()).toContain("/usr/local/bin/tampered-2")
          await page.locator('[data-testid="timeline"] tbody tr', { hasText: "ima.validation.ima-ng.not_in_allowlist" }).first().waitFor(WAIT)
          await page.screenshot({ path: join(shots, "up-agent-tampered.png"), fullPage: true })
          // the push agent's page: what failed and the timeline of its attestations with their verdicts
          await page.goto(`${url}#/agent/${ids[2]}`, WAIT)
          const identity = page.getByTestId("agent-identity")
          await identity.filter({ hasText: "File not found in allowlist: /usr/local/bin/tampered-3" }).waitFor(WAIT)
          const text = (await identity.textContent()) ?? ""
          expect(["push (sends its evidence, API 3.0)", "FAIL (acceptance of its attestations)", "none (push)", "policy_violation: ima.validation.ima-ng.not_in_allowlist"].filter((t) => !text.includes(t))).toEqual([])
          await page.locator('[data-testid="timeline"] tbody tr', { hasText: /\d+ passed|attestations? passed/ }).first().waitFor(WAIT)
          await page.locator('[data-testid="timeline"] tbody tr', { hasText: "attestation failed: policy_violation: ima.validation.ima-ng.not_in_allowlist" }).first().waitFor(WAIT)
          await page.screenshot({ path: join(shots, "up-push-agent-tampered.png"), fullPage: true })
          expect(pageErrors).toEqual([])
        } finally {
          await context.close()
        }
      })
    }).pipe(Effect.scoped), 420_000)
})
