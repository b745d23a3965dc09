/**
 * The dashboard in a real headless Chromium (Debian's chromium driven by playwright-core), over a
 * running registrar and verifier: the overview shows the counts, sorts and filters the agents'
 * table, opens an agent's page (identity, policies, timeline with a failure and its type), and a
 * change made while the page is open (an agent added, one deleted, one failing) arrives through
 * the live updates without a reload. In cluster mode (agents taken by two runners' loops) the fleet
 * page counts each runner's agents and an agent's page names its runner and the seconds since its
 * last verified quote (issue 24). A verifier that cannot be reached is named on the page.
 * Screenshots are kept in test-results/dashboard/ (CI keeps them as artefacts).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import * as net from "node:net"
import type { Browser, Page } from "playwright-core"
import { launchChromium } from "../support/chromium.js"
import { needsChromium } from "../support/requirements.js"
import { makeTestPki, removePki, startFleet } from "./harness.js"

const available = needsChromium()
const pki = makeTestPki()
const shots = resolve(__dirname, "../../test-results/dashboard")
let browser: Browser | undefined

beforeAll(async () => {
  if (!available) return
  mkdirSync(shots, { recursive: true })
  // launch() gives every run a fresh temporary profile (user-data-dir), removed at close
  browser = await launchChromium()
}, 180_000)
afterAll(async () => {
  await browser?.close()
  removePki(pki)
})

const ids = Array.from({ length: 5 }, (_, i) => `d432fbb3-d2f1-4a97-9ef7-75bd81c0b00${i + 1}`)
/** Generous bounds: a loaded machine (two cores, several suites) renders slowly. */
const WAIT = { timeout: 60_000 }

const newPage = (f: (page: Page) => Promise<void>) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const context = await browser!.newContext({ viewport: { width: 1366, height: 800 } })
      return { context, page: await context.newPage() }
    }),
    ({ page }) => Effect.promise(() => f(page)),
    ({ context }) => Effect.promise(() => context.close())
  )

const text = (page: Page, testid: string) => page.getByTestId(testid).textContent()
const rowIds = (page: Page, table: string) =>
  page.locator(`[data-testid="${table}"] tbody tr[data-row]`).evaluateAll((rows) => rows.map((r) => r.getAttribute("data-row")))

describe.skipIf(!available)("dashboard in headless Chromium", () => {
  it.scopedLive("overview counts, sort, filter, agent page, live updates", () =>
    Effect.gen(function*() {
      const fleet = yield* startFleet(pki, { intervalMs: 500 })
      for (const id of ids.slice(0, 4)) yield* fleet.addToVerifier(id)
      for (const id of ids.slice(0, 3)) yield* fleet.register(id)
      yield* fleet.verdict(ids[0]!, { valid: true })
      yield* fleet.verdict(ids[1]!, { valid: true })
      // cluster mode: two runners' loops took three agents; the fourth is not taken yet
      const [runnerA, runnerB] = ["10.0.0.1:34431", "10.0.0.2:34431"]
      yield* fleet.takeOwnership(ids[0]!, runnerA)
      yield* fleet.takeOwnership(ids[1]!, runnerA)
      yield* fleet.takeOwnership(ids[2]!, runnerB)
      yield* fleet.sampler.sampleNow
      yield* newPage(async (page) => {
        const pageErrors: Array<string> = []
        page.on("pageerror", (e) => pageErrors.push(e.message))
        await page.goto(fleet.dashboardUrl, WAIT)
        await page.getByTestId("count-agents").filter({ hasText: "4" }).waitFor(WAIT)
        expect({ pass: await text(page, "count-pass"), fail: await text(page, "count-fail"), pending: await text(page, "count-pending") })
          .toEqual({ pass: "2", fail: "0", pending: "2" })
        await page.locator('[data-testid="live"].on').waitFor(WAIT)
        expect(await page.locator('[data-testid="fleet-chart"] polyline').count()).toBe(3)
        expect((await rowIds(page, "agents-table")).sort()).toEqual(ids.slice(0, 4))
        expect({ a: await text(page, `n-runner-${runnerA}`), b: await text(page, `n-runner-${runnerB}`) }).toEqual({ a: "2", b: "1" })
        expect(await page.locator(`[data-testid="agents-table"] tr[data-row="${ids[2]}"]`).textContent()).toContain(runnerB)

        // sorted by agent id at first; a click on its header reverses, a click on another sorts by it
        const header = page.locator('[data-testid="agents-table"] th[data-key="id"]')
        expect(await rowIds(page, "agents-table")).toEqual(ids.slice(0, 4))
        await header.click()
        expect(await header.getAttribute("aria-sort")).toBe("descending")
        expect(await rowIds(page, "agents-table")).toEqual(ids.slice(0, 4).reverse())
        await page.locator('[data-testid="agents-table"] th[data-key="attestationCount"]').click()
        expect((await rowIds(page, "agents-table")).slice(0, 2).sort()).toEqual(ids.slice(2, 4))
        await header.click()
        expect(await rowIds(page, "agents-table")).toEqual(ids.slice(0, 4))
        // filter by status text, then by part of an id
        await page.getByTestId("agents-table-filter").fill("pending")
        expect((await rowIds(page, "agents-table")).sort()).toEqual(ids.slice(2, 4))
        await page.getByTestId("agents-table-filter").fill("b004")
        expect(await rowIds(page, "agents-table")).toEqual([ids[3]])
        expect(await text(page, "agents-table-count")).toBe("1 of 4")
        await page.getByTestId("agents-table-filter").fill("")
        await page.screenshot({ path: join(shots, "overview.png"), fullPage: true })

        // live: one added, one deleted, one failing, while the page stays open (the filter is kept)
        await page.getByTestId("agents-table-filter").fill("d432fbb3")
        await Effect.runPromise(Effect.all([
          fleet.addToVerifier(ids[4]!),
          fleet.deleteFromVerifier(ids[3]!),
          fleet.verdict(ids[2]!, { valid: false, failureType: "qoute_validation.quote_validation" })
        ], { discard: true }))
        await page.waitForFunction((want) => {
          const rows = [...(globalThis as any).document.querySelectorAll('[data-testid="agents-table"] tbody tr[data-row]')].map((r: any) => r.getAttribute("data-row")).sort()
          return JSON.stringify(rows) === JSON.stringify(want)
        }, [ids[0], ids[1], ids[2], ids[4]].sort(), WAIT)
        await page.getByTestId("count-fail").filter({ hasText: "1" }).waitFor(WAIT)
        await page.getByTestId("failures-hour").filter({ hasText: "1" }).waitFor(WAIT)
        expect(await page.getByTestId("agents-table-filter").inputValue()).toBe("d432fbb3")
        await page.screenshot({ path: join(shots, "overview-live.png"), fullPage: true })

        // the failed agent's page, opened from its row
        await page.locator(`[data-testid="agents-table"] tr[data-row="${ids[2]}"]`).click()
        await page.getByTestId("agent-id").filter({ hasText: ids[2]! }).waitFor(WAIT)
        await page.getByTestId("agent-identity").filter({ hasText: "Invalid Quote" }).waitFor(WAIT)
        expect(await text(page, "agent-runner")).toBe(runnerB)
        // never verified: the verifier counts from its creation, moments ago
        expect(await text(page, "since-verified")).toMatch(/^\d+ s \(the verifier's count, from its creation\)$/)
        expect(await text(page, "agent-identity")).toContain("EK certificate issuer")
        expect(await text(page, "agent-policies")).toContain(ids[2])
        expect(await text(page, "agent-pcrs")).toContain("does not report")
        const failure = page.locator('[data-testid="timeline"] tbody tr', { hasText: "qoute_validation.quote_validation" })
        await failure.first().waitFor(WAIT)
        expect(await failure.first().locator("td").nth(1).textContent()).toBe("failure")
        await page.screenshot({ path: join(shots, "agent.png"), fullPage: true })

        // policies and registrar pages
        await page.click('a[data-nav="policies"]')
        await page.locator('[data-testid="policies-table"] td', { hasText: ids[0]! }).first().waitFor(WAIT)
        await page.click('a[data-nav="registrar"]')
        await page.getByTestId("count-registered").filter({ hasText: "3" }).waitFor(WAIT)
        expect(await text(page, "count-active")).toBe("3")
        expect(await page.locator('[data-testid="registrar-table"] tbody tr').first().textContent()).toContain("CN=")
        await page.screenshot({ path: join(shots, "registrar.png"), fullPage: true })
        expect(pageErrors).toEqual([])
      })
    }), 300_000)

  it.scopedLive("names an unreachable verifier on the page", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(() =>
        new Promise<number>((done) => {
          const s = net.createServer().listen(0, "127.0.0.1", () => {
            const p = (s.address() as net.AddressInfo).port
            s.close(() => done(p))
          })
        })
      )
      const fleet = yield* startFleet(pki, { verifierUrl: `https://127.0.0.1:${port}`, intervalMs: 500 })
      yield* newPage(async (page) => {
        await page.goto(fleet.dashboardUrl, WAIT)
        const banner = page.getByTestId("service-error").filter({ hasText: "verifier" })
        await banner.first().waitFor(WAIT)
        expect(await banner.first().textContent()).toContain(`https://127.0.0.1:${port}`)
        expect(await banner.first().textContent()).toContain("ECONNREFUSED")
        expect(await text(page, "count-agents")).toBe("0")
        await page.screenshot({ path: join(shots, "verifier-unreachable.png"), fullPage: true })
      })
    }), 300_000)
})
