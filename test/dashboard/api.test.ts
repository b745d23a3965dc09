/**
 * The dashboard's JSON API without a browser, against a real registrar and verifier (HTTPS, mTLS
 * with the admin certificate): counts, registrar view with EK issuers, an agent's timeline, policy
 * names, a live change (agent added and deleted) after a sample, a verifier that cannot be reached
 * (the answer says so, the server keeps serving), and requests for another Host refused.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { vcall } from "../verifier/apiHarness.js"
import { recordedPolicyBase64 } from "../verifier/support.js"
import { getJson, makeTestPki, removePki, simulatorCaSubject, startFleet } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const A = "d432fbb3-d2f1-4a97-9ef7-75bd81c0d001"
const B = "d432fbb3-d2f1-4a97-9ef7-75bd81c0d002"
const C = "d432fbb3-d2f1-4a97-9ef7-75bd81c0d003"

/** A loopback port nothing listens on (bound, then closed). */
const closedPort = () =>
  Effect.promise(() =>
    new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as net.AddressInfo).port
        s.close(() => resolve(port))
      })
    })
  )

const rawGet = (url: string, host: string) =>
  Effect.promise(() =>
    new Promise<number>((resolve, reject) => {
      const u = new URL(url)
      http.get({ host: u.hostname, port: u.port, path: "/api/overview", headers: { host } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      }).on("error", reject)
    })
  )

describe("dashboard JSON API", () => {
  it.scopedLive("aggregates the verifier and the registrar; a change shows after the next sample", () =>
    Effect.gen(function*() {
      const fleet = yield* startFleet(pki, { intervalMs: 60_000 })
      yield* fleet.addToVerifier(A)
      yield* fleet.addToVerifier(B)
      yield* fleet.register(A)
      yield* fleet.register(C, false)
      const rt = yield* vcall(pki, fleet.verifier, { method: "POST", path: "/v2.6/allowlists/rt1", json: { runtime_policy: recordedPolicyBase64() } })
      expect(rt.status).toBe(201)
      expect((yield* vcall(pki, fleet.verifier, { method: "POST", path: "/v2.6/mbpolicies/mb1", json: { mb_policy: "{}" } })).status).toBe(201)
      yield* fleet.sampler.sampleNow

      const overview = yield* getJson(`${fleet.dashboardUrl}api/overview`)
      expect(overview.status).toBe(200)
      expect(overview.json.services.verifier).toMatchObject({ ok: true, error: null })
      expect(overview.json.services.registrar).toMatchObject({ ok: true, error: null })
      expect(overview.json.counts).toEqual({
        agents: 2,
        byStatus: { PASS: 0, FAIL: 0, PENDING: 2 },
        byState: { start: 2 },
        freshness: { under_1m: 0, "1m_to_10m": 0, over_10m: 0, never: 2 },
        // single-process mode: no runner took any agent
        byRunner: {}
      })
      const rows = Object.fromEntries(overview.json.agents.map((r: any) => [r.id, r]))
      expect(rows[A]).toMatchObject({ stateName: "Start", status: "PENDING", registered: true, active: true, attestationCount: 0, lastEventId: null })
      expect(rows[B]).toMatchObject({ registered: false, active: null })

      const registrar = yield* getJson(`${fleet.dashboardUrl}api/registrar`)
      expect(registrar.json.counts).toEqual({ registered: 2, active: 1 })
      const regRows = Object.fromEntries(registrar.json.agents.map((r: any) => [r.id, r]))
      expect(regRows[A]).toMatchObject({ active: true, regcount: 1, ekIssuer: simulatorCaSubject, onVerifier: true, error: null })
      expect(regRows[C]).toMatchObject({ active: false, ekIssuer: null, onVerifier: false, error: null })

      const policies = yield* getJson(`${fleet.dashboardUrl}api/policies`)
      expect(policies.json.policies).toEqual([
        { kind: "runtime", name: A, agents: [A] },
        { kind: "runtime", name: B, agents: [B] },
        { kind: "runtime", name: "rt1", agents: null },
        { kind: "measured_boot", name: A, agents: [A] },
        { kind: "measured_boot", name: B, agents: [B] },
        { kind: "measured_boot", name: "mb1", agents: null }
      ])
      expect(policies.json.usersKnown).toBe(false)

      const agent = yield* getJson(`${fleet.dashboardUrl}api/agents/${A}`)
      expect(agent.status).toBe(200)
      expect(agent.json).toMatchObject({ id: A, onVerifier: true, registrar: { active: true }, policies: { runtime: `${A} (empty: nothing checked)`, measuredBoot: `${A} (empty: nothing checked)` } })
      expect(agent.json.timeline.map((e: any) => e.kind)).toEqual(["added"])
      const unknown = yield* getJson(`${fleet.dashboardUrl}api/agents/d432fbb3-d2f1-4a97-9ef7-75bd81c0dfff`)
      expect(unknown.status).toBe(404)
      expect(unknown.json.error).toContain("known to neither")

      // a change between samples: C added to the verifier, A deleted
      yield* fleet.addToVerifier(C)
      yield* fleet.deleteFromVerifier(A)
      yield* fleet.sampler.sampleNow
      const after = yield* getJson(`${fleet.dashboardUrl}api/overview`)
      expect(after.json.agents.map((r: any) => r.id).sort()).toEqual([B, C])
      expect(after.json.version).toBeGreaterThan(overview.json.version)
      const gone = yield* getJson(`${fleet.dashboardUrl}api/agents/${A}`)
      expect(gone.json.onVerifier).toBe(false)
      expect(gone.json.timeline.map((e: any) => e.kind)).toEqual(["removed", "added"])
    }), 120_000)

  it.scopedLive("attestations and failures written by the loop show as counts, freshness, rate and timeline events", () =>
    Effect.gen(function*() {
      const fleet = yield* startFleet(pki, { intervalMs: 60_000 })
      yield* fleet.addToVerifier(A)
      yield* fleet.addToVerifier(B)
      yield* fleet.sampler.sampleNow
      yield* fleet.verdict(A, { valid: true })
      yield* fleet.verdict(A, { valid: true })
      yield* fleet.verdict(B, { valid: false, failureType: "ima.policy_violation" })
      yield* fleet.sampler.sampleNow
      const overview = yield* getJson(`${fleet.dashboardUrl}api/overview`)
      expect(overview.json.counts).toMatchObject({
        byStatus: { PASS: 1, FAIL: 1, PENDING: 0 },
        byState: { get_quote: 1, invalid_quote: 1 },
        freshness: { under_1m: 1, "1m_to_10m": 0, over_10m: 0, never: 1 }
      })
      expect(overview.json.failuresLastHour).toBe(1)
      expect(overview.json.attestationsPerSecond).toBeGreaterThan(0)
      expect(overview.json.series.map((p: any) => [p.pass, p.fail, p.pending])).toEqual([[0, 0, 0], [0, 0, 2], [1, 1, 0]])
      const a = yield* getJson(`${fleet.dashboardUrl}api/agents/${A}`)
      expect(a.json.verifier).toMatchObject({ attestationCount: 2, status: "PASS", hashAlg: "sha256" })
      expect(a.json.timeline.map((e: any) => [e.kind, e.count ?? null])).toEqual([["attested", 2], ["state", null], ["added", null]])
      const b = yield* getJson(`${fleet.dashboardUrl}api/agents/${B}`)
      expect(b.json.timeline[0]).toMatchObject({ kind: "failure", type: "ima.policy_violation", severity: 1 })
      expect(b.json.verifier).toMatchObject({ status: "FAIL", stateName: "Invalid Quote", lastEventId: "ima.policy_violation" })
    }), 120_000)

  it.scopedLive("says so when the verifier cannot be reached, and keeps serving", () =>
    Effect.gen(function*() {
      const port = yield* closedPort()
      const fleet = yield* startFleet(pki, { verifierUrl: `https://127.0.0.1:${port}`, intervalMs: 200 })
      yield* fleet.register(A)
      yield* fleet.sampler.sampleNow
      const first = yield* getJson(`${fleet.dashboardUrl}api/overview`)
      expect(first.status).toBe(200)
      expect(first.json.services.verifier.ok).toBe(false)
      expect(first.json.services.verifier.error).toContain("ECONNREFUSED")
      expect(first.json.services.verifier.error).toContain(`127.0.0.1:${port}`)
      expect(first.json.services.registrar.ok).toBe(true)
      expect(first.json.counts.agents).toBe(0)
      // several failed samples later the server still answers every view
      yield* Effect.sleep("1 second")
      for (const path of ["api/overview", "api/policies", "api/registrar", `api/agents/${A}`, ""]) {
        expect((yield* getJson(`${fleet.dashboardUrl}${path}`)).status).toBe(200)
      }
      const later = yield* getJson(`${fleet.dashboardUrl}api/overview`)
      expect(later.json.version).toBeGreaterThan(first.json.version)
      expect(later.json.services.verifier.failingSince).toBe(first.json.services.verifier.failingSince)
    }), 120_000)

  it.scopedLive("refuses a request for another Host (DNS rebinding) and methods other than GET", () =>
    Effect.gen(function*() {
      const fleet = yield* startFleet(pki, { intervalMs: 60_000 })
      const u = new URL(fleet.dashboardUrl)
      expect(yield* rawGet(fleet.dashboardUrl, "attacker.example")).toBe(403)
      expect(yield* rawGet(fleet.dashboardUrl, u.host)).toBe(200)
      expect(yield* rawGet(fleet.dashboardUrl, `localhost:${u.port}`)).toBe(200)
      const post = yield* Effect.promise(() => fetch(`${fleet.dashboardUrl}api/overview`, { method: "POST", body: "{}" }))
      expect(post.status).toBe(405)
      const page = yield* getJson(fleet.dashboardUrl)
      expect(page.contentType).toContain("text/html")
      expect(page.text).toContain("/assets/app.js")
    }), 120_000)
})
