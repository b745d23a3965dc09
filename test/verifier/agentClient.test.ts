/**
 * AgentClient against real sockets: a quote from a running agent (its certificate pinned, the
 * verifier's client certificate presented), and each kind of failure the loop decides on:
 * connection (a closed port), tls (another certificate pinned), http_status (the agent refuses an
 * API version, with its text), decode (a 200 that is not the agent's answer) and timeout (a server
 * that never answers within request_timeout). Nonces are 20 letters and digits, fresh each time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { readFileSync } from "node:fs"
import * as https from "node:https"
import * as net from "node:net"
import { join } from "node:path"
import { type AgentTarget, makeAgentClient, newNonce } from "../../src/verifier/pull/AgentClient.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"

const agentId = "client00-d2f1-4a97-9ef7-75bd81c0c001"

/** An HTTPS server with the test CA's server certificate; `answer` decides each response. */
const server = (caDir: string, answer: (res: import("node:http").ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ port: number; s: https.Server }>((resume) => {
      const read = (f: string) => readFileSync(join(caDir, f), "utf8")
      const s = https.createServer({ key: read("server-private.pem"), cert: read("server-cert.crt") }, (_req, res) => answer(res))
      s.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (s.address() as net.AddressInfo).port, s })))
    }),
    ({ s }) => Effect.sync(() => {
      s.closeAllConnections()
      s.close()
    })
  )

describe("AgentClient", () => {
  it("makes fresh 20-character nonces of letters and digits", () => {
    const nonces = Array.from({ length: 200 }, newNonce)
    expect(nonces.every((n) => /^[A-Za-z0-9]{20}$/.test(n))).toBe(true)
    expect(new Set(nonces).size).toBe(200)
  })

  it.scopedLive("asks a quote over mTLS and classifies each kind of failure", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-agent-client-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const agent = Context.get(
        yield* Layer.build(simulatedAgentLayer({ agentId, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem }, { name: "client-test" })),
        RunningAgent
      )
      const pinned = yield* makeAgentClient({ cert: ca.clientCert, key: ca.clientKey, agentCa: undefined, mtls: true }, 2)
      const target: AgentTarget = { agentId, ip: "127.0.0.1", port: agent.port, mtlsCert: agent.serverCert, apiVersion: "2.5" }
      const request = { nonce: newNonce(), mask: 0x400, partial: 0 as const, imaEntry: 0 }

      const quote = yield* pinned.integrityQuote(target, request)
      expect([quote.hash_alg, quote.ima_measurement_list_entry, typeof quote.pubkey]).toEqual(["sha256", 0, "string"])

      const kind = (e: Effect.Effect<unknown, { readonly kind: string; readonly status?: number | undefined }>) =>
        Effect.map(Effect.flip(e), (f) => [f.kind, f.status])

      // a closed port
      const closed = yield* Effect.async<number>((resume) => {
        const s = net.createServer().listen(0, "127.0.0.1", () => {
          const port = (s.address() as net.AddressInfo).port
          s.close(() => resume(Effect.succeed(port)))
        })
      })
      expect(yield* kind(pinned.integrityQuote({ ...target, port: closed }, request))).toEqual(["connection", undefined])
      // another certificate pinned than the one the agent presents
      expect(yield* kind(pinned.integrityQuote({ ...target, agentId: "other", mtlsCert: ca.caPem }, request))).toEqual(["tls", undefined])
      // a pinned text that is no certificate: no trust at all, a TLS failure when connecting
      expect(yield* kind(pinned.integrityQuote({ ...target, agentId: "not-pem", mtlsCert: "not a certificate" }, request))).toEqual(["tls", undefined])
      // an API version the agent does not serve: its 400
      const refused = yield* Effect.flip(pinned.integrityQuote({ ...target, agentId: "v9", apiVersion: "9.9" }, request))
      expect([refused.kind, refused.status]).toEqual(["http_status", 400])

      // servers whose certificate chains to agent_ca: an answer that is not a quote, and none at all
      const byCa = yield* makeAgentClient({ cert: ca.clientCert, key: ca.clientKey, agentCa: ca.caPem, mtls: true }, 1)
      const garbage = yield* server(ca.dir, (res) => res.writeHead(200, { "content-type": "application/json" }).end(`{"code": 200, "results": {"quote": 1}}`))
      expect(yield* kind(byCa.integrityQuote({ ...target, agentId: "garbage", port: garbage.port, mtlsCert: null }, request))).toEqual(["decode", undefined])
      const silent = yield* server(ca.dir, () => undefined)
      expect(yield* kind(byCa.integrityQuote({ ...target, agentId: "silent", port: silent.port, mtlsCert: null }, request))).toEqual(["timeout", undefined])
    }), 120_000)

  it.scopedLive("reads an answer as undici's body.text() does, and an interrupted quote aborts its request", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-agent-client-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const client = yield* makeAgentClient({ cert: ca.clientCert, key: ca.clientKey, agentCa: ca.caPem, mtls: true }, 30)
      const target: AgentTarget = { agentId, ip: "127.0.0.1", port: 0, mtlsCert: null, apiVersion: "2.5" }
      const request = { nonce: newNonce(), mask: 0x400, partial: 0 as const, imaEntry: 0 }

      // a refusal whose envelope follows a UTF-8 byte-order mark: its status text, as before
      const bom = yield* server(ca.dir, (res) =>
        res.writeHead(400, { "content-type": "application/json" }).end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"code": 400, "status": "API version not supported"}`)])))
      const refused = yield* Effect.flip(client.integrityQuote({ ...target, agentId: "bom", port: bom.port }, request))
      expect([refused.kind, refused.status, refused.reason]).toEqual(["http_status", 400, "API version not supported"])

      // a body cut after the headers: the connection failed while the answer was read
      const cut = yield* server(ca.dir, (res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
        res.write(`{"code": 200, `, () => res.socket?.destroy())
      })
      expect((yield* Effect.flip(client.integrityQuote({ ...target, agentId: "cut", port: cut.port }, request))).kind).toEqual("connection")

      // a server that never answers: interrupting the quote closes its connection long before request_timeout
      const closed = yield* Deferred.make<void>()
      const silent = yield* server(ca.dir, (res) => res.socket?.once("close", () => Deferred.unsafeDone(closed, Effect.void)))
      const fiber = yield* Effect.fork(client.integrityQuote({ ...target, agentId: "silent", port: silent.port }, request))
      yield* Effect.sleep("500 millis")
      yield* Fiber.interrupt(fiber)
      expect(yield* Deferred.await(closed).pipe(Effect.timeout("20 seconds"), Effect.as("closed"))).toEqual("closed")
    }), 120_000)
})
