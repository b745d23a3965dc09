/**
 * The verifier's routes over HTTPS (admin certificate) on SQLite: Keylime's v2.x API and the v3
 * JSON:API, fuzzed from its OpenAPI document. No 5xx, the family's envelope, nothing stored after a
 * refusal.
 */
import { afterAll, describe } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { DbLive } from "../../src/db/Sql.js"
import { testDatabase } from "../support/db.js"
import { makeTestPki, removePki, startVerifier } from "../verifier/apiHarness.js"
import { recordedPolicyBase64, validBody } from "../verifier/support.js"
import { Either, FastCheck as fc } from "effect"
import { encodeQuoteString, marshalTpm2bPublic, parsePcrBlob } from "../../src/tpm/index.js"
import { readVector } from "../support/vectors.js"
import { makeAk, makeQuote } from "../tpm/quoteFixture.js"
import { fuzzWith } from "./harness.js"
import { checkAnswer, send, checkRequest, type Family, requestArb, type RouteServer, routesOf, snapshotRows } from "./routes.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"
const routes = routesOf("verifier")
const v3 = (template: string) => template.startsWith("/v3")
const DOCUMENTS = new Set(["/version", "/versions", "/openapi.json", "/.well-known/ear-jwks.json"])

/**
 * Which document a request is answered with: the documents above are their own JSON, /v3… is
 * JSON:API (but for /v3…/verify/*), the rest Keylime's envelope. Keylime's own answers without a body: `GET /` (307 to
 * /v3.0/, ver-root) and `GET /v3.0/` (200, the probe push agents send, push-model.md §1).
 */
const familyOf = (req: { readonly method: string; readonly path: string }): Family => {
  const p = req.path.split("?")[0]!
  if (req.method === "GET" && (p === "/" || /^\/v3(\.0)?\/$/.test(p))) return "none"
  if (DOCUMENTS.has(p)) return "any-json"
  // Keylime serves the one-shot verifications under v3 with the v2 envelope (docs/openapi/verifier.json)
  if (/^\/v3(\.[0-9]+)?\/verify\//.test(p)) return "keylime"
  return /^\/v3(\.[0-9]+)?(\/|$)/.test(p) ? "jsonapi" : "keylime"
}

const verifierServer = Effect.gen(function*() {
  const db = yield* testDatabase("sqlite")
  const v = yield* startVerifier({ pki, db })
  const rowsLayer = yield* Layer.build(DbLive(db, "verifier").pipe(Layer.orDie))
  const rows = () => Effect.runPromise(snapshotRows.pipe(Effect.provide(rowsLayer)))
  return { url: v.url, tls: pki.clients.admin, rows } satisfies RouteServer
})

/**
 * A flipped bit of the tpm2-tools PCR blob can land in bytes its parser skips (unused selection
 * slots): the values the quote is checked against are then the same, and acceptance is right.
 */
const samePcrs = (a: Uint8Array, b: Uint8Array): boolean => {
  const pa = parsePcrBlob(a)
  const pb = parsePcrBlob(b)
  return Either.isRight(pa) && Either.isRight(pb) && JSON.stringify(pa.right, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v instanceof Map ? [...v] : v)) ===
    JSON.stringify(pb.right, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v instanceof Map ? [...v] : v))
}

const params = { agent_id: [AGENT, "agent-2"], name: ["rt1", "mb1"], session_id: ["1", "0"], index: ["0", "1", "latest"] }
const validBodies = {
  "/v{api_version}/agents/{agent_id}": validBody,
  "/v{api_version}/allowlists/{name}": () => ({ runtime_policy: recordedPolicyBase64() }),
  "/v{api_version}/mbpolicies/{name}": () => ({ mb_policy: "{}" })
}

describe("fuzz: verifier routes over HTTPS", () => {
  fuzzWith(verifierServer, {
    name: "verifier-v2-routes",
    runs: 120,
    input: requestArb(routes.filter((r) => !v3(r.template)), { params, validBodies, extraPaths: [...DOCUMENTS, "/"] }),
    check: (req, server) => checkRequest(server, req, familyOf)
  })

  // verify/evidence over HTTPS: a quote that verifies (PCR-only policy) and then, changed, does not
  const ak = makeAk("rsa")
  const nonce = "fuzzNonce1234567890A"
  const quote = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 7] }], new TextEncoder().encode(nonce))
  const evidence = (quoteString: string, n = nonce) => ({
    type: "tpm",
    data: {
      quote: quoteString,
      nonce: n,
      hash_alg: "sha256",
      tpm_ek: Buffer.from(readVector("tpm", "ek", "ek_rsa.pub")).toString("base64"),
      tpm_ak: Buffer.from(marshalTpm2bPublic(ak.public)).toString("base64"),
      tpm_policy: JSON.stringify({ mask: "0x81" })
    }
  })
  const verdict = async (server: RouteServer, body: unknown) => {
    const req = { method: "POST", path: "/v2.6/verify/evidence", headers: { "content-type": "application/json" }, body: JSON.stringify(body), chunked: false }
    const res = (await send(server.url, server.tls, req))!
    checkAnswer(req, res, "keylime")
    return { status: res.status, valid: (JSON.parse(res.body) as { results: { valid?: unknown } }).results.valid, body: res.body }
  }
  const evidenceServer = Effect.tap(verifierServer, (server) =>
    Effect.promise(async () => {
      const control = await verdict(server, evidence(quote.quote))
      if (control.valid !== true) throw new Error(`the unchanged evidence does not verify: ${control.body}`)
    }))
  fuzzWith(evidenceServer, {
    name: "evidence-tamper",
    runs: 60,
    input: fc.record({ part: fc.constantFrom("attest", "signature", "pcrs", "nonce"), bit: fc.nat() }),
    check: async (c, server) => {
      const flip = (b: Uint8Array) => {
        const x = new Uint8Array(b)
        const i = c.bit % (x.length * 8)
        x[i >> 3]! ^= 1 << (i & 7)
        return x
      }
      const parts = { attest: quote.attest, signature: quote.signature, pcrBlob: quote.pcrBlob }
      const changed = c.part === "attest"
        ? { ...parts, attest: flip(parts.attest) }
        : c.part === "signature"
        ? { ...parts, signature: flip(parts.signature) }
        : c.part === "pcrs"
        ? { ...parts, pcrBlob: flip(parts.pcrBlob) }
        : parts
      const n = c.part === "nonce" ? nonce.slice(0, c.bit % nonce.length) + String.fromCharCode(nonce.charCodeAt(c.bit % nonce.length) ^ 1) + nonce.slice((c.bit % nonce.length) + 1) : nonce
      const sameValues = c.part === "pcrs" && samePcrs(changed.pcrBlob, parts.pcrBlob)
      const v = await verdict(server, evidence(encodeQuoteString(changed), n))
      if (v.valid === true && !sameValues) throw new Error(`verify/evidence accepted the quote with bit ${c.bit} of its ${c.part} changed: ${v.body}`)
    }
  })

  fuzzWith(verifierServer, {
    name: "verifier-v3-routes",
    runs: 120,
    input: requestArb(routes.filter((r) => v3(r.template)), { params, extraPaths: [...DOCUMENTS, "/"] }),
    check: (req, server) => checkRequest(server, req, familyOf)
  })
})
