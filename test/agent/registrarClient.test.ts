/**
 * The agent's registrar client is the registrar's own RegistrarApi through HttpApiClient: a
 * refusal comes back as a final RegistrationError carrying the registrar's status and text (here,
 * a registrar that does not trust the simulated TPM manufacturer), with no retry.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { afterAll, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { createServer, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { V2_VERSIONS } from "../../src/http/versions.js"
import { emptyTrustStore } from "../../src/pki/chain.js"
import { registerOnce, RegistrationError } from "../../src/agent/Registration.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { makeTestPki, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { tempDir } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))

/** One registration attempt at `url` with the simulated TPM in context: its error (the attempt must fail). */
const registerAt = (url: string, id: string) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const ak = yield* tpm.createAk("rsa", { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" })
    return yield* Effect.flip(registerOnce({
      registrarUrl: url,
      agentId: id,
      ekPublic: yield* tpm.ekPublic("rsa"),
      ekCertificate: yield* tpm.ekCertificate("rsa"),
      ak,
      mtlsCert: "disabled",
      contactIp: "127.0.0.1",
      contactPort: 9002,
      versions: V2_VERSIONS.supported
    }))
  })

it.live("a registrar's refusal is a final RegistrationError with its status text", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-agent-regclient-")
    const ctx = yield* Layer.build(Layer.mergeAll(
      testRegistrarLayer({ pki, ekTrustStore: emptyTrustStore("no EK CAs") }, sqliteLayer(join(dir, "registrar.sqlite"))),
      TpmSimulator.layer({ seed: "regclient-agent" }),
      NodeHttpClient.layerUndici
    ))
    const reg = Context.get(ctx, TestRegistrar)
    const error = yield* registerAt(reg.httpUrl, "regclient-agent-1").pipe(Effect.provide(ctx))
    expect(error).toBeInstanceOf(RegistrationError)
    expect(error).toMatchObject({
      step: "register",
      transient: false,
      message: expect.stringMatching(
        /^POST http:\/\/127\.0\.0\.1:\d+\/v2\.6\/agents\/regclient-agent-1 answered 400: Could not register agent with invalid data: ekcert does not chain to a trusted TPM manufacturer CA/
      )
    })
  }).pipe(Effect.scoped), 60_000)

/**
 * A registrar that dies while it answers leaves the agent a body cut short: transient (the agent
 * asks again), where a body read whole that is not JSON stays final. A plain HTTP server stands in
 * for the registrar's socket: the cut is the point, not the registrar's logic.
 */
const answering = (write: (res: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<Server>((resume) => {
      const server = createServer((req, res) =>
        req.resume().on("end", () =>
          // the version is asked first, and answered whole: the registration is the answer cut
          req.url === "/version"
            ? res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
              code: 200,
              status: "Success",
              results: { current_version: "2.6", supported_versions: [...V2_VERSIONS.supported] }
            }))
            : write(res)))
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const simulated = Layer.merge(TpmSimulator.layer({ seed: "regclient-cut" }), NodeHttpClient.layerUndici)

it.live("a registrar answer cut short is transient; one read whole but not JSON is final", () =>
  Effect.gen(function*() {
    const cut = yield* answering((res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "400" })
      res.write(`{"code": 200, "status": "Success", "results": {"blob": "`)
      setTimeout(() => res.socket?.destroy(), 20)
    })
    const cutError = yield* registerAt(`http://127.0.0.1:${(cut.address() as AddressInfo).port}`, "regclient-cut-1").pipe(Effect.provide(simulated))
    expect({ step: cutError.step, transient: cutError.transient, message: cutError.message }).toMatchObject({ step: "register", transient: true, message: expect.stringMatching(/answered 200, but its body was cut short$/) })

    const garbage = yield* answering((res) => res.writeHead(200, { "content-type": "application/json" }).end("this is not a registrar"))
    const garbageError = yield* registerAt(`http://127.0.0.1:${(garbage.address() as AddressInfo).port}`, "regclient-cut-2").pipe(Effect.provide(simulated))
    expect({ step: garbageError.step, transient: garbageError.transient, message: garbageError.message }).toMatchObject({ step: "register", transient: false, message: expect.stringMatching(/: unexpected answer: .*Could not parse JSON/s) })
  }).pipe(Effect.scoped), 60_000)
