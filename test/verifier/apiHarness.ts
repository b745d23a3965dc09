/**
 * A verifier under test over HTTPS: the registrar harness's throw-away CA and client identities
 * (admin, none, foreign, expired, noClientAuth), the verifier's API on a free loopback port over a
 * fresh SQLite file or PostgreSQL schema, with the replay's settings (support.ts testConfig) and a
 * recording PollerControl; and a raw client that parses the envelope.
 */
import { Context, Effect, Layer } from "effect"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { DbLive, type DatabaseOptions } from "../../src/db/Sql.js"
import type { VerifierOptions } from "../../src/config/sections.js"
import { rawRequest, type RawResponse } from "../../src/http/client.js"
import { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { VERIFIER_LISTENER, VerifierServerLive } from "../../src/verifier/Server.js"
import { SnpTrustRoots } from "../../src/verifier/stateless/Stateless.js"
import type { SnpRoots } from "../../src/tee/index.js"
import { type TestPki, testServerTls, type Who } from "../registrar/harness.js"
import { recordingPoller, testConfig } from "./support.js"

export { makeTestPki, removePki, type TestPki, type Who } from "../registrar/harness.js"

export interface VerifierUnderTest {
  readonly url: string
}
export class TestVerifier extends Context.Tag("test/TestVerifier")<TestVerifier, VerifierUnderTest>() {}

export interface TestVerifierOptions {
  readonly pki: TestPki
  readonly db: DatabaseOptions
  readonly config?: Partial<VerifierOptions>
  readonly poller?: Layer.Layer<PollerControl>
  readonly maxBodyBytes?: number
  /** SEV-SNP ARK/ASK pairs other than AMD's (a test chain). */
  readonly snpRoots?: SnpRoots
}

/** The verifier's HTTPS listener on a free port over the given database. */
export const testVerifierLayer = (o: TestVerifierOptions): Layer.Layer<TestVerifier> =>
  Layer.effect(TestVerifier, Effect.map(BoundListeners, (bound) => ({ url: bound.get(VERIFIER_LISTENER)!.url }))).pipe(
    Layer.provide(VerifierServerLive({ host: "127.0.0.1", port: 0, ...(o.maxBodyBytes === undefined ? {} : { maxBodyBytes: o.maxBodyBytes }) })),
    Layer.provide(testServerTls(o.pki)),
    Layer.provide(o.poller ?? recordingPoller().layer),
    Layer.provide(o.snpRoots === undefined ? Layer.empty : Layer.succeed(SnpTrustRoots, o.snpRoots)),
    Layer.provide(Layer.merge(DbLive(o.db, "verifier"), testConfig(o.config ?? {}))),
    Layer.orDie
  )

export interface VCall {
  readonly method: string
  readonly path: string
  readonly who?: Who
  readonly json?: unknown
  /** Sent verbatim with content-type application/json. */
  readonly body?: string
  readonly headers?: Readonly<Record<string, string>>
}

export interface VParsed extends RawResponse {
  readonly json: unknown
}

const parse = (r: RawResponse): VParsed => {
  let json: unknown = undefined
  try {
    json = r.body.length > 0 ? JSON.parse(r.body) : undefined
  } catch {
    json = undefined
  }
  return { ...r, json }
}

/** The verifier started in the current scope (stopped when it closes). */
export const startVerifier = (o: TestVerifierOptions) =>
  Effect.map(Layer.build(testVerifierLayer(o)), (ctx) => Context.get(ctx, TestVerifier))

/** One HTTPS request to the verifier under test (admin certificate unless `who` says otherwise). */
export const vcall = (pki: TestPki, v: VerifierUnderTest, c: VCall): Effect.Effect<VParsed> =>
  rawRequest({
    method: c.method,
    baseUrl: v.url,
    path: c.path,
    ...(c.json !== undefined
      ? { body: JSON.stringify(c.json), headers: { "content-type": "application/json", ...c.headers } }
      : c.body !== undefined
      ? { body: c.body, headers: { "content-type": "application/json", ...c.headers } }
      : c.headers !== undefined
      ? { headers: c.headers }
      : {}),
    tls: pki.clients[c.who ?? "admin"]
  }).pipe(Effect.map(parse), Effect.orDie)

/** status, envelope status text and results of a parsed answer. */
export const summary = (r: VParsed) => {
  const env = r.json as { code?: number; status?: string; results?: unknown } | undefined
  return { status: r.status, text: env?.status, results: env?.results }
}
