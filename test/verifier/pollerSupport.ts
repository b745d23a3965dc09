/**
 * The verifier's domain with the real poller over a real database, simulated agents to attest, a
 * recording decorator of the live AgentClient (what the loop asked, what agents answered), a
 * webhook receiver, and waiting for a condition on the wall clock with a generous bound.
 */
import { Effect, Exit, Layer } from "effect"
import { createHash } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { makeRuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { DbLive, type DatabaseOptions } from "../../src/db/Sql.js"
import { defaultFiles } from "../../src/agent/measurements/SimulatedMachine.js"
import type { VerifierOptions } from "../../src/config/sections.js"
import { AgentClient, AgentClientLive, type AgentTarget, type QuoteRequest } from "../../src/verifier/pull/AgentClient.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { VerifierClientTls } from "../../src/verifier/pull/ClientTls.js"
import { pollerWithClient } from "../../src/verifier/pull/Poller.js"
import { PolicyCache } from "../../src/verifier/domain/policy/PolicyCache.js"
import { Policies } from "../../src/verifier/domain/policy/Policies.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { NotificationOutbox } from "../../src/verifier/domain/repo/NotificationOutbox.js"
import { MbPolicyRepo, RuntimePolicyRepo } from "../../src/verifier/domain/repo/PolicyRepo.js"
import type { RevocationBody } from "../../src/attestation/revocation.js"
import type { TestCa } from "../agent/support.js"
import { testConfig, validBody } from "./support.js"

export interface ClientLog {
  readonly quotes: Array<{ readonly agentId: string; readonly request: QuoteRequest }>
  readonly vkeys: Array<{ readonly agentId: string; readonly ok: boolean }>
  readonly revocations: Array<{ readonly agentId: string; readonly body: RevocationBody; readonly ok: boolean; readonly error?: string }>
}

export const newClientLog = (): ClientLog => ({ quotes: [], vkeys: [], revocations: [] })

/** The live AgentClient, recording each request and whether the agent accepted it. */
export const recordingClient = (log: ClientLog) =>
  Layer.effect(
    AgentClient,
    Effect.map(AgentClient, (inner) => ({
      ...inner,
      integrityQuote: (t: AgentTarget, r: QuoteRequest) => Effect.suspend(() => {
        log.quotes.push({ agentId: t.agentId, request: r })
        return inner.integrityQuote(t, r)
      }),
      deliverV: (t: AgentTarget, k: string) =>
        inner.deliverV(t, k).pipe(Effect.onExit((e) => Effect.sync(() => void log.vkeys.push({ agentId: t.agentId, ok: Exit.isSuccess(e) })))),
      revocation: (t: AgentTarget, body: RevocationBody) =>
        inner.revocation(t, body).pipe(Effect.onExit((e) =>
          Effect.sync(() =>
            void log.revocations.push({
              agentId: t.agentId,
              body,
              ok: Exit.isSuccess(e),
              ...(Exit.isFailure(e) ? { error: String(e.cause) } : {})
            })
          )
        ))
    }))
  ).pipe(Layer.provide(AgentClientLive))

/** Database, config and the verifier's client identity (the test CA's client certificate). */
export const pollerBase = (db: DatabaseOptions, ca: TestCa, config: Partial<VerifierOptions>) =>
  Layer.mergeAll(DbLive(db, "verifier"), testConfig(config), VerifierClientTls.fromPem({ cert: ca.clientCert, key: ca.clientKey }))

/** The poller (recording into `log`) over the base. */
export const pollerOver = (log: ClientLog) => pollerWithClient(recordingClient(log))

/** The domain services with the given poller; everything over one database. */
export const verifierWithPoller = (db: DatabaseOptions, ca: TestCa, config: Partial<VerifierOptions>, log: ClientLog) =>
  Layer.mergeAll(Agents.Default, Policies.Default, AgentRepo.Default, RuntimePolicyRepo.Default, MbPolicyRepo.Default, NotificationOutbox.Default, PolicyCache.withCapacity(4))
    .pipe(Layer.provideMerge(pollerOver(log)), Layer.provideMerge(pollerBase(db, ca, config)))

const sha256Hex = (s: string | Uint8Array) => createHash("sha256").update(s).digest("hex")

/** A runtime policy allowing the simulated machine's default files (boot_aggregate excluded: no boot log is asked for). */
export const machinePolicyBase64 = (extra: ReadonlyArray<{ readonly path: string; readonly content: string }> = []): string =>
  Buffer.from(JSON.stringify(makeRuntimePolicy({
    digests: Object.fromEntries([...defaultFiles, ...extra].map((f) => [f.path, [sha256Hex(f.content)]])),
    excludes: ["boot_aggregate"]
  }))).toString("base64")

/** A creation body for a running simulated agent (Keylime 7's tenant body, API 2.5 agent). */
export const agentBody = (
  agent: { readonly port: number; readonly akPublic: Uint8Array; readonly serverCert: string },
  o: { readonly revocationKey?: string; readonly v?: boolean } = {}
): Record<string, unknown> => ({
  ...validBody(),
  cloudagent_ip: "127.0.0.1",
  cloudagent_port: agent.port,
  ak_tpm: Buffer.from(agent.akPublic).toString("base64"),
  mtls_cert: agent.serverCert,
  tpm_policy: JSON.stringify({ mask: "0x400" }),
  runtime_policy: machinePolicyBase64(),
  revocation_key: o.revocationKey ?? "",
  accept_tpm_signing_algs: ["ecschnorr", "rsassa", "ecdsa"],
  supported_version: "2.5",
  ...(o.v === false ? { v: null } : {})
})

/** Polls `read` (wall clock) until `ok`, at most `timeoutMs`; dies naming what it waited for and the last value. */
export const waitFor = <A, E, R>(what: string, read: Effect.Effect<A, E, R>, ok: (a: A) => boolean, timeoutMs = 90_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const a = yield* read
      if (ok(a)) return a
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}; last: ${JSON.stringify(a)}`))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 100)))
    }
  })

/** A plain-HTTP webhook receiver on 127.0.0.1: records JSON bodies; answers 503 while `down`. */
export const webhookReceiver = Effect.acquireRelease(
  Effect.async<{ url: string; bodies: Array<unknown>; state: { down: boolean; refused: number }; server: http.Server }>((resume) => {
    const bodies: Array<unknown> = []
    const state = { down: false, refused: 0 }
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        if (state.down) {
          state.refused++
          res.writeHead(503).end()
          return
        }
        try {
          bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")))
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        } catch {
          res.writeHead(400).end()
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/revocation`, bodies, state, server }))
    })
  }),
  (w) => Effect.async<void>((resume) => {
    w.server.closeAllConnections()
    w.server.close(() => resume(Effect.void))
  })
)
