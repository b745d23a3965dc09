/**
 * The agent's registrar client is the registrar's own RegistrarApi through HttpApiClient: a
 * refusal comes back as a final RegistrationError carrying the registrar's status and text (here,
 * a registrar that does not trust the simulated TPM manufacturer), with no retry.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { afterAll, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
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

it.live("a registrar's refusal is a final RegistrationError with its status text", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir("attest-agent-regclient-")
    const ctx = yield* Layer.build(Layer.mergeAll(
      testRegistrarLayer({ pki, ekTrustStore: emptyTrustStore("no EK CAs") }, sqliteLayer(join(dir, "registrar.sqlite"))),
      TpmSimulator.layer({ seed: "regclient-agent" }),
      NodeHttpClient.layerUndici
    ))
    const reg = Context.get(ctx, TestRegistrar)
    const tpm = Context.get(ctx, Tpm)
    const ak = yield* tpm.createAk("rsa", { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" })
    const error = yield* Effect.flip(registerOnce({
      registrarUrl: reg.httpUrl,
      agentId: "regclient-agent-1",
      ekPublic: yield* tpm.ekPublic("rsa"),
      ekCertificate: yield* tpm.ekCertificate("rsa"),
      ak,
      mtlsCert: "disabled",
      contactIp: "127.0.0.1",
      contactPort: 9002,
      versions: V2_VERSIONS.supported
    }).pipe(Effect.provide(ctx)))
    expect(error).toBeInstanceOf(RegistrationError)
    expect(error).toMatchObject({
      step: "register",
      transient: false,
      message: expect.stringMatching(
        /^POST http:\/\/127\.0\.0\.1:\d+\/v2\.6\/agents\/regclient-agent-1 answered 400: Could not register agent with invalid data: ekcert does not chain to a trusted TPM manufacturer CA/
      )
    })
  }).pipe(Effect.scoped), 60_000)
