/**
 * The OpenAPI documents (src/http/openapi.ts, src/cli/apiDocuments.ts): committed files are what the
 * code generates (scripts/openapi.ts --check, as CI runs it), every reference resolves, versioned
 * paths carry the version parameter, and errors are the envelope the platform serves (no
 * HttpApiDecodeError), with constant codes.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { AGENT_API_VERSIONS } from "../../src/agent/Http.js"
import { V2_VERSIONS } from "../../src/http/versions.js"
import { agentDocument } from "../../src/agent/openapi.js"
import { apiDocuments } from "../../src/cli/apiDocuments.js"
import { registrarDocument } from "../../src/registrar/openapi.js"
import type { JsonObject } from "../../src/http/openapi.js"

const root = resolve(__dirname, "../..")

const runScript = (...args: Array<string>) =>
  new Promise<{ code: number | null; out: string; err: string }>((done, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/openapi.ts", ...args], { cwd: root })
    let out = ""
    let err = ""
    child.stdout.on("data", (d: Buffer) => (out += d.toString()))
    child.stderr.on("data", (d: Buffer) => (err += d.toString()))
    child.once("error", reject)
    child.once("close", (code) => done({ code, out, err }))
  })

const refsOf = (value: unknown, out: Array<string> = []): Array<string> => {
  if (Array.isArray(value)) for (const v of value) refsOf(v, out)
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push(v)
      else refsOf(v, out)
    }
  }
  return out
}

const operations = (doc: JsonObject) =>
  Object.entries(doc["paths"] as Record<string, Record<string, JsonObject>>).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })))

describe("OpenAPI documents", () => {
  it("are committed as generated (the CI check passes), and the check fails on a stale file", async () => {
    for (const { name, document } of apiDocuments) {
      expect(readFileSync(join(root, "docs/openapi", `${name}.json`), "utf8"), name).toBe(`${JSON.stringify(document(), null, 2)}\n`)
    }
    const ok = await runScript("--check")
    expect([ok.code, ok.err]).toEqual([0, ""])
    // a copy of the documents with a stale registrar document: the check names it and exits 1
    const dir = mkdtempSync(join(tmpdir(), "attest-openapi-"))
    for (const { name } of apiDocuments) copyFileSync(join(root, "docs/openapi", `${name}.json`), join(dir, `${name}.json`))
    writeFileSync(join(dir, "registrar.json"), "{}\n")
    const stale = await runScript("--check", "--dir", dir)
    expect(stale.code).toBe(1)
    expect(stale.err).toContain("registrar.json")
    expect(stale.err).not.toContain("agent.json")
  }, 120_000)

  it("resolve every $ref, describe errors as envelopes and never as HttpApiDecodeError", () => {
    for (const { name, document } of apiDocuments) {
      const doc = document()
      expect(doc["openapi"], name).toBe("3.1.0")
      const schemas = (doc["components"] as { schemas: Record<string, JsonObject> }).schemas
      for (const ref of refsOf(doc)) expect(schemas[ref.replace("#/components/schemas/", "")], `${name}: ${ref}`).toBeDefined()
      expect(JSON.stringify(doc)).not.toContain("HttpApiDecodeError")
      for (const { method, op, path } of operations(doc)) {
        const responses = op["responses"] as Record<string, JsonObject>
        if (path === "/openapi.json" || path.startsWith("/.well-known/")) continue // served beside the API, never an envelope
        // API 3.0 answers in JSON:API (its verify/* share the v2 shapes)
        if (path.startsWith("/v3.0/") && !path.startsWith("/v3.0/verify/")) {
          expect(refsOf(responses["4XX"]), `${name} ${method} ${path}`).toEqual(["#/components/schemas/JsonApiErrorDocument"])
          continue
        }
        // verify/evidence's input errors also carry their failures in `results`
        const withResults = path.endsWith("/verify/evidence") ? ["#/components/schemas/Error400ResultsEnvelope"] : []
        expect(refsOf(responses["400"]), `${name} ${method} ${path}`).toEqual(["#/components/schemas/Error400Envelope", ...withResults])
      }
      expect(schemas["Error400Envelope"]).toMatchObject({ properties: { code: { const: 400 }, status: { type: "string" }, results: { type: "object" } } })
    }
  })

  it("prefix versioned paths with /v{api_version} (the versions served) and leave /version and /openapi.json unversioned", () => {
    const registrar = registrarDocument()
    expect(Object.keys(registrar["paths"] as object).sort()).toEqual([
      "/openapi.json",
      "/version",
      "/v{api_version}/agents",
      "/v{api_version}/agents/{agent_id}",
      "/v{api_version}/agents/{agent_id}/activate",
      "/v{api_version}/agents/{agent_id}/vactivate"
    ])
    const register = operations(registrar).find((o) => o.op["operationId"] === "agents.register")!
    expect((register.op["parameters"] as Array<JsonObject>)[0]).toMatchObject({ name: "api_version", in: "path", schema: { enum: V2_VERSIONS.supported } })
    expect(Object.keys(register.op["responses"] as object).sort()).toEqual(["200", "400", "403", "404", "413", "500", "503"])
    expect((register.op["responses"] as Record<string, JsonObject>)["503"]!["headers"]).toHaveProperty("Retry-After")
    const agent = agentDocument()
    const integrity = operations(agent).find((o) => o.op["operationId"] === "quotes.integrity")!
    expect((integrity.op["parameters"] as Array<JsonObject>)[0]).toMatchObject({ schema: { enum: [...AGENT_API_VERSIONS] } })
    expect(Object.keys(agent["paths"] as object)).toContain("/version")
  })
})
