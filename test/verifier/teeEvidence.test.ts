/**
 * POST verify/evidence with `type: "tee"` over HTTPS: the SEV-SNP path of the verifier (src/tee
 * verifyTeeEvidence with the VCEKs of snp_vcek_dir and the chain cache). The real Milan report and
 * VCEK of vectors/snp verify against AMD's shipped ARK/ASK (only freshness fails: its report_data
 * binds someone else's nonce); reports the test signs with its own ARK → ASK → VCEK chain (given to
 * the verifier as its trust roots) are valid, with claims.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TEE_FAILURE } from "../../src/tee/index.js"
import { testDatabase } from "../support/db.js"
import { freshness, makeTestChain, milanReport, milanVcek, requestData, signedReport } from "../tee/support.js"
import { makeTestPki, removePki, startVerifier, summary, vcall } from "./apiHarness.js"

const pki = makeTestPki()
const vcekDir = mkdtempSync(join(tmpdir(), "attest-vcek-"))
writeFileSync(join(vcekDir, "vcek_milan.der"), milanVcek())
afterAll(() => {
  removePki(pki)
  rmSync(vcekDir, { recursive: true, force: true })
})

type Results = { readonly valid: unknown; readonly claims?: Record<string, unknown>; readonly failures: ReadonlyArray<{ readonly type: string }> }
const types = (r: unknown) => (r as Results).failures.map((f) => f.type)
const f = freshness()

describe("verify/evidence type tee (AMD SEV-SNP) over HTTPS", () => {
  it.scopedLive("the real Milan report and VCEK pass AMD's chain, TCB, chip id and signature; only freshness fails", () =>
    Effect.gen(function*() {
      const v = yield* startVerifier({ pki, db: yield* testDatabase("sqlite") })
      const r = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", who: "none", json: { type: "tee", data: requestData(milanReport(), f, milanVcek()) } }))
      expect(r.status).toBe(200)
      expect(types(r.results)).toEqual([TEE_FAILURE.freshnessHashFailed])
      expect(r.results).toMatchObject({ valid: false, claims: {} })

      const flipped = milanReport()
      flipped[21]! ^= 0x80
      const bad = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: { type: "tee", data: requestData(flipped, f, milanVcek()) } }))
      expect(bad.status).toBe(200)
      expect(types(bad.results)).toContain(TEE_FAILURE.invalidSignature)

      // no VCEK in the evidence and no snp_vcek_dir
      const noVcek = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: { type: "tee", data: requestData(milanReport(), f) } }))
      expect(types(noVcek.results)).toEqual([TEE_FAILURE.vcekNotFound])
    }))

  it.scopedLive("takes the VCEK from snp_vcek_dir (read once at start) when the evidence has none", () =>
    Effect.gen(function*() {
      const v = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), config: { snp_vcek_dir: vcekDir } })
      const r = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: { type: "tee", data: requestData(milanReport(), f) } }))
      expect(r.status).toBe(200)
      expect(types(r.results)).toEqual([TEE_FAILURE.freshnessHashFailed])
    }))

  it.scopedLive("a fresh report of a trusted chain is valid with its claims (2.5+ boolean, 2.4 integer); a missing field is a 400 naming it", () =>
    Effect.gen(function*() {
      const chain = makeTestChain()
      const v = yield* startVerifier({ pki, db: yield* testDatabase("sqlite"), snpRoots: chain.roots })
      const data = requestData(signedReport(chain, f), f, chain.vcekDer)
      const r = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: { type: "tee", data } }))
      expect(r.status).toBe(200)
      expect(r.results).toMatchObject({ valid: true, failures: [], claims: { product_line: "Milan", vmpl: 0 } })
      expect((r.results as Results).claims!["measurement"]).toEqual(Array.from({ length: 48 }, () => 0x4d))
      const v24 = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.4/verify/evidence", json: { type: "tee", data } }))
      expect(v24.results).toEqual({ valid: 1, failures: [] })
      // the report of another chain is refused by the chain check
      const other = makeTestChain()
      const foreign = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: { type: "tee", data: requestData(signedReport(other, f), f, other.vcekDer) } }))
      expect(types(foreign.results)).toContain(TEE_FAILURE.vcekChain)
      const { ["tee-evidence"]: _gone, ...withoutEvidence } = data
      const missing = summary(yield* vcall(pki, v, { method: "POST", path: "/v2.6/verify/evidence", json: { type: "tee", data: withoutEvidence } }))
      expect(missing).toEqual({
        status: 400,
        text: "Bad Request",
        results: { valid: false, claims: {}, failures: [{ type: "tee_attestation.missing_param", context: { message: "missing parameter \"tee-evidence\"" } }] }
      })
    }))
})
