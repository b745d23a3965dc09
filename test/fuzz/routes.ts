/**
 * HTTP route fuzzing: requests generated from a server's OpenAPI document (docs/openapi/*.json: its
 * routes, their methods and the property names of their bodies) with junk around them (methods,
 * percent-encoding, long ids, versions, query strings, content types, chunked bodies, deep JSON), sent
 * over real HTTPS; and the invariants every answer keeps: no 5xx, the envelope of its API family, and
 * nothing stored when the request was refused.
 */
import { SqlClient } from "@effect/sql"
import { Effect, FastCheck as fc } from "effect"
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import { join } from "node:path"
import type { ClientTls } from "../../src/http/client.js"
import { bodyWith, jsonWith } from "./arbitraries.js"

export interface Route {
  readonly method: string
  readonly template: string
  readonly bodyKeys: ReadonlyArray<string>
  readonly queryKeys: ReadonlyArray<string>
}

type Schema = { readonly $ref?: string; readonly properties?: Record<string, Schema>; readonly items?: Schema; readonly [k: string]: unknown }

/** The routes of docs/openapi/<api>.json with the property names their bodies and queries use. */
export const routesOf = (api: "verifier" | "registrar" | "agent"): ReadonlyArray<Route> => {
  const doc = JSON.parse(readFileSync(join(import.meta.dirname, "../../docs/openapi", `${api}.json`), "utf8")) as {
    paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> }; parameters?: ReadonlyArray<{ in: string; name: string }> }>>
    components?: { schemas?: Record<string, Schema> }
  }
  const keysOf = (s: Schema | undefined, seen: Set<string>, out: Set<string>): void => {
    if (s === undefined || typeof s !== "object") return
    if (typeof s.$ref === "string") {
      const name = s.$ref.split("/").pop()!
      if (seen.has(name)) return
      seen.add(name)
      return keysOf(doc.components?.schemas?.[name], seen, out)
    }
    for (const [k, v] of Object.entries(s.properties ?? {})) {
      out.add(k)
      keysOf(v, seen, out)
    }
    for (const v of Object.values(s)) if (Array.isArray(v)) for (const x of v) keysOf(x as Schema, seen, out)
    if (s.items !== undefined) keysOf(s.items, seen, out)
  }
  const routes: Array<Route> = []
  for (const [template, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (method === "parameters") continue
      const body = new Set<string>()
      for (const c of Object.values(op.requestBody?.content ?? {})) keysOf(c.schema, new Set(), body)
      const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name)
      routes.push({ method: method.toUpperCase(), template, bodyKeys: [...body], queryKeys: query })
    }
  }
  return routes
}

export interface FuzzRequest {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  readonly chunked: boolean
}

const percentJunk = fc.constantFrom("%", "%zz", "%00", "%2F..%2F..%2Fetc", "%C0%AF", "%ff%fe", "..", ".", "%20", "a%2Fb", "%25", "%E2%80%AE", "%0d%0aX:1")
/** An id as a path segment: the valid ones given, long ones, junk and percent-encoded anything. */
export const idSegment = (valid: ReadonlyArray<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...valid) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 2000 }).map((n) => "a".repeat(n)) },
    { weight: 2, arbitrary: fc.string({ maxLength: 40, unit: "binary" }).map(encodeURIComponent) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...valid), percentJunk).map(([v, j]) => v + j) },
    { weight: 1, arbitrary: percentJunk },
    { weight: 1, arbitrary: fc.constantFrom("", "0", "-1", "null", "undefined", "__proto__", "constructor", "1e999", "ffffffff-ffff-ffff-ffff-ffffffffffff") }
  )

const versions = fc.constantFrom("2.6", "2.5", "2.4", "2.3", "2.2", "2.1", "2.0", "3.0", "3", "1.0", "2", "2.7", "99.0", "2.6.1", "x", "")

const contentTypes = fc.constantFrom(
  "application/json", "application/json; charset=utf-8", "application/vnd.api+json", "APPLICATION/JSON", "text/plain",
  "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json;;", "", "*/*", "application/json; charset=latin1"
)

const queryString = (keys: ReadonlyArray<string>) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant("") },
    {
      weight: 2,
      arbitrary: fc.array(
        fc.tuple(keys.length > 0 ? fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 6 })) : fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("", "0x408000", "sha256", "rsassa", "true", "1", "-1", "AAAA", "a".repeat(3000)))),
        { maxLength: 5 }
      ).map((kv) => "?" + kv.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&"))
    },
    { weight: 1, arbitrary: percentJunk.map((j) => `?${j}=${j}&&=&a`) }
  )

const deepJson = fc.integer({ min: 10, max: 200 }).chain((n) => fc.constantFrom("[".repeat(n) + "]".repeat(n), "{\"a\":".repeat(n) + "1" + "}".repeat(n), "[".repeat(n)))

export interface RequestOptions {
  /** Values for each {param} of the templates (the valid ones; junk is added). */
  readonly params: Readonly<Record<string, ReadonlyArray<string>>>
  /** Valid bodies per template, mutated field by field. */
  readonly validBodies?: Readonly<Record<string, () => Record<string, unknown>>>
  /** Paths no OpenAPI document lists (pages, assets). */
  readonly extraPaths?: ReadonlyArray<string>
  readonly maxBody?: number
  readonly headers?: fc.Arbitrary<Readonly<Record<string, string>>>
}

export const requestArb = (routes: ReadonlyArray<Route>, o: RequestOptions): fc.Arbitrary<FuzzRequest> => {
  const route = fc.constantFrom(...routes)
  const method = (r: Route) => fc.oneof({ weight: 6, arbitrary: fc.constant(r.method) }, { weight: 1, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND") })
  const fill = (template: string): fc.Arbitrary<string> => {
    const parts = template.split(/(\{[^}]+\})/).filter((p) => p !== "")
    return fc.tuple(...parts.map((p) => {
      if (!p.startsWith("{")) return fc.constant(p)
      const name = p.slice(1, -1)
      if (name === "api_version") return versions
      return idSegment(o.params[name] ?? ["x"])
    })).map((xs) => xs.join(""))
  }
  const body = (r: Route): fc.Arbitrary<string | undefined> => {
    const valid = o.validBodies?.[r.template]
    const keys = r.bodyKeys.length > 0 ? r.bodyKeys : ["data", "type", "attributes", "id"]
    return fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 8, arbitrary: bodyWith(keys, valid).map((b) => JSON.stringify(b) ?? "null") },
      { weight: 1, arbitrary: jsonWith(keys, 6).map((b) => JSON.stringify(b) ?? "null") },
      { weight: 1, arbitrary: fc.string({ maxLength: 200, unit: "binary" }) },
      { weight: 1, arbitrary: deepJson },
      { weight: 1, arbitrary: fc.integer({ min: 1000, max: o.maxBody ?? 200_000 }).map((n) => JSON.stringify({ [keys[0]!]: "A".repeat(n) })) },
      { weight: 1, arbitrary: fc.constantFrom("", "{", "{}", "[]", "null", "\"\"", "1", "{\"__proto__\": {\"polluted\": 1}}", "{\"a\":1,\"a\":2}", "\ufeff{}") }
    )
  }
  const path = fc.oneof(
    { weight: 9, arbitrary: route.chain((r) => fc.tuple(fill(r.template), queryString(r.queryKeys)).map(([p, q]) => p + q)) },
    { weight: 1, arbitrary: fc.oneof(fc.constantFrom(...(o.extraPaths ?? ["/"])), fc.string({ maxLength: 60 }).map((s) => "/" + encodeURIComponent(s)), fc.constantFrom("//", "/v2.6//agents", "/v2.6/agents/", "/./", "/%2e%2e/", "/v3.0/agents/a/../..", "/*")) }
  )
  return fc.record({
    r: route,
    path,
    extraHeaders: o.headers ?? fc.constant({}),
    contentType: fc.option(contentTypes, { nil: undefined }),
    accept: fc.option(fc.constantFrom("application/json", "application/vnd.api+json", "text/html", "*/*", "x/y"), { nil: undefined }),
    chunked: fc.boolean()
  }).chain(({ r, path, extraHeaders, contentType, accept, chunked }) =>
    fc.tuple(method(r), body(r)).map(([m, b]): FuzzRequest => ({
      method: m,
      path,
      headers: { ...(contentType === undefined ? {} : { "content-type": contentType }), ...(accept === undefined ? {} : { accept }), ...extraHeaders },
      body: b,
      chunked: chunked && b !== undefined
    }))
  )
}

export interface FuzzResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** One request, written as given (chunked or with its length); undefined when node refuses to send it. */
export const send = (baseUrl: string, tls: ClientTls | undefined, req: FuzzRequest): Promise<FuzzResponse | undefined> =>
  new Promise((resolve, reject) => {
    const url = new URL(baseUrl)
    const body = req.body === undefined ? undefined : Buffer.from(req.body)
    const headers: Record<string, string> = { ...req.headers }
    if (body !== undefined && !req.chunked) headers["content-length"] = String(body.length)
    if (req.chunked) headers["transfer-encoding"] = "chunked"
    let r: http.ClientRequest
    try {
      r = (url.protocol === "https:" ? https : http).request({
        method: req.method,
        host: url.hostname,
        port: url.port,
        path: req.path,
        headers,
        agent: false,
        ...(tls === undefined
          ? {}
          : {
            ca: tls.ca,
            ...(tls.cert === undefined ? {} : { cert: tls.cert, key: tls.key }),
            ...(tls.checkServerIdentity === false ? { checkServerIdentity: () => undefined } : {})
          }),
        timeout: 20_000
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("error", reject)
        res.on("end", () => resolve({
          status: res.statusCode ?? 0,
          headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v ?? "")])),
          body: Buffer.concat(chunks).toString("utf8")
        }))
      })
    } catch {
      // a path or header node will not put on the wire (a client-side refusal, not the server's)
      return resolve(undefined)
    }
    r.on("timeout", () => r.destroy(new Error(`no answer to ${req.method} ${req.path} within 20 s`)))
    r.on("error", reject)
    if (body !== undefined && req.chunked) {
      // two chunks, so a body split across reads is exercised
      const half = Math.floor(body.length / 2)
      r.write(body.subarray(0, half))
      r.end(body.subarray(half))
    } else r.end(body)
  })

export type Family = "keylime" | "jsonapi" | "any-json" | "none"

/**
 * The answer keeps the invariants: not 5xx, and (unless HEAD or 204) the document of its family —
 * Keylime's envelope `{code, status, results}` with code = HTTP status, or a JSON:API document
 * (`data`, or `errors` whose first status is the HTTP status) with its media type.
 */
export const checkAnswer = (req: FuzzRequest, res: FuzzResponse, family: Family): void => {
  const what = `${req.method} ${req.path.slice(0, 200)} (${req.headers["content-type"] ?? "no content-type"}${req.chunked ? ", chunked" : ""}) → ${res.status} ${res.body.slice(0, 300)}`
  if (res.status >= 500 || res.status < 100) throw new Error(`a ${res.status} answer: ${what}`)
  if (req.method === "HEAD" || res.status === 204 || res.status === 304 || family === "none") return
  let doc: unknown
  try {
    doc = JSON.parse(res.body)
  } catch {
    throw new Error(`an answer that is not JSON: ${what}`)
  }
  if (family === "any-json") return
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new Error(`an answer that is not a JSON object: ${what}`)
  const d = doc as Record<string, unknown>
  if (family === "keylime") {
    if (d["code"] !== res.status || typeof d["status"] !== "string" || typeof d["results"] !== "object" || d["results"] === null) {
      throw new Error(`an answer outside Keylime's envelope: ${what}`)
    }
    return
  }
  if (!(res.headers["content-type"] ?? "").startsWith("application/vnd.api+json")) throw new Error(`a v3 answer without the JSON:API media type: ${what}`)
  if (res.status >= 400) {
    const errors = d["errors"]
    if (!Array.isArray(errors) || errors.length === 0 || (errors[0] as { status?: unknown }).status !== String(res.status)) {
      throw new Error(`a v3 refusal that is not a JSON:API error document: ${what}`)
    }
  } else if (!("data" in d) && !("meta" in d)) throw new Error(`a v3 answer without data: ${what}`)
}

/** Rows of every table, each as its JSON, for "nothing stored after a refusal". */
export type Rows = ReadonlyMap<string, ReadonlySet<string>>

/** A refusal may remove rows (an unactivated registration on a wrong auth_tag), never add or change one. */
export const checkNothingStored = (req: FuzzRequest, res: FuzzResponse, before: Rows, after: Rows): void => {
  if (res.status < 400) return
  for (const [table, rows] of after) {
    const was = before.get(table) ?? new Set()
    for (const row of rows) {
      if (!was.has(row)) throw new Error(`${req.method} ${req.path.slice(0, 200)} was refused (${res.status} ${res.body.slice(0, 200)}) but ${table} now holds ${row.slice(0, 300)}`)
    }
  }
}

/** Every file under `dir` with the SHA-256 of its content, as one "table" (a server without a database). */
export const snapshotFiles = (dir: string): Rows => {
  const out = new Set<string>()
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.isFile()) out.add(`${p.slice(dir.length)} ${createHash("sha256").update(readFileSync(p)).digest("hex")}`)
    }
  }
  walk(dir)
  return new Map([["files", out]])
}

/** Every row of every table of the database the client is on (SQLite), by table. */
export const snapshotRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
  const out = new Map<string, Set<string>>()
  for (const { name } of tables) {
    const rows = yield* sql.unsafe<Record<string, unknown>>(`SELECT * FROM "${name}"`)
    out.set(name, new Set(rows.map((r) => JSON.stringify(r, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : typeof v === "bigint" ? String(v) : v)))))
  }
  return out as Rows
}).pipe(
  Effect.mapError((e) => new Error(`reading the rows: ${e.message}: ${String(e.cause)}`)),
  Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("reading the rows took over 20 s (a connection held by the server?)") }),
  Effect.orDie
)

export interface RouteServer {
  readonly url: string
  readonly tls: ClientTls | undefined
  /** The rows now (undefined: the server has no database to check). */
  readonly rows: (() => Promise<Rows>) | undefined
}

/** One fuzzed request against a running server, with every invariant checked. */
export const checkRequest = async (server: RouteServer, req: FuzzRequest, family: (req: FuzzRequest) => Family): Promise<void> => {
  const before = server.rows === undefined ? undefined : await server.rows()
  const res = await send(server.url, server.tls, req)
  if (res === undefined) return
  checkAnswer(req, res, family(req))
  if (before !== undefined) checkNothingStored(req, res, before, await server.rows!())
}
