/**
 * The registrar's domain fails with facts, not HTTP (issue 9 §1): which agent, which field, why, and
 * whether the database was only momentarily away; Http.ts alone turns each into the envelope's
 * status and Keylime's text.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Base64 } from "../../schemas/Common.js"
import { RegisterRequest } from "../../schemas/Registrar.js"
import * as crypto from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import {
  ActivationRaced,
  AgentNotActivated,
  AgentNotFound,
  AuthTagMismatch,
  ConcurrentRegistration,
  DifferentTpmIdentity,
  InvalidRegistrationData
} from "../../src/registrar/errors.js"
import { httpErrorOf } from "../../src/registrar/Http.js"
import { EkTrustStore, Registrar, RegistrarSettings } from "../../src/registrar/Registrar.js"
import { RepoError } from "../../src/registrar/Repo.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, sqliteLayer } from "./harness.js"

const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-reg-domain-")), "registrar.sqlite"))
const env = Layer.mergeAll(
  Registrar.Default.pipe(
    Layer.provide(Layer.succeed(EkTrustStore, trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA"))),
    Layer.provide(Layer.succeed(RegistrarSettings, { tpmIdentity: "default" })),
    Layer.provide(db)
  ),
  TpmSimulator.layer({ seed: "domain-agent" })
)

describe("registrar domain errors", () => {
  layer(env, { timeout: 60_000, excludeTestServices: true })((it) => {
    it.effect("carry the agent, the field and the reason", () =>
      Effect.gen(function*() {
        const registrar = yield* Registrar
        const good = Schema.decodeUnknownSync(RegisterRequest)((yield* agentBody(yield* Tpm)).body)
        const bad = yield* Effect.flip(registrar.register("dom-1", { ...good, aik_tpm: Base64.make("AAAA") }))
        expect(bad).toBeInstanceOf(InvalidRegistrationData)
        expect(bad).toMatchObject({ agentId: "dom-1", field: "aik_tpm", reason: expect.stringMatching(/^is not a TPM2B_PUBLIC/) })

        expect(yield* Effect.flip(registrar.activate("dom-missing", "00", "192.0.2.1"))).toEqual(new AgentNotFound({ agentId: "dom-missing" }))
        yield* registrar.register("dom-2", good)
        expect(yield* Effect.flip(registrar.show("dom-2"))).toEqual(new AgentNotActivated({ agentId: "dom-2" }))
        expect(yield* Effect.flip(registrar.activate("dom-2", "00", "192.0.2.1"))).toEqual(
          new AuthTagMismatch({ agentId: "dom-2", authTag: "00", caller: "192.0.2.1", registrationDeleted: true })
        )
        expect(yield* Effect.flip(registrar.show("dom-2"))).toEqual(new AgentNotFound({ agentId: "dom-2" }))
      }))
  })

  describe("Http.ts maps each one to the envelope status and Keylime's text", () => {
    const cases: ReadonlyArray<readonly [unknown, number, string]> = [
      [new InvalidRegistrationData({ agentId: "a", field: "ekcert", reason: "is not a DER X.509 certificate" }), 400, "Could not register agent with invalid data: ekcert is not a DER X.509 certificate"],
      [new DifferentTpmIdentity({ agentId: "a" }), 403, "Agent re-registration with different TPM identity is forbidden for security reasons"],
      [new ConcurrentRegistration({ agentId: "a" }), 403, "Agent with UUID 'a' cannot be registered. This UUID is already in use or a concurrent registration is in progress."],
      [new AgentNotFound({ agentId: "a" }), 404, "Agent with ID 'a' not found"],
      [new AgentNotActivated({ agentId: "a" }), 404, "Agent with ID 'a' has not been activated"],
      [new AuthTagMismatch({ agentId: "a", authTag: "00", caller: "x", registrationDeleted: true }), 400, "Auth tag '00' for agent 'a' does not match expected value. The agent has been deleted from the database and will need to be restarted to reattempt registration"],
      [new AuthTagMismatch({ agentId: "a", authTag: "00", caller: "x", registrationDeleted: false }), 400, "Auth tag '00' for agent 'a' does not match expected value. The agent's active registration is unchanged"],
      [new ActivationRaced({ agentId: "a" }), 400, "Agent with ID 'a' registered again during activation; activate the newest blob"],
      [new RepoError({ operation: "find", message: "registrar database: find failed", transient: true }), 503, "The registrar database is unavailable at the moment; retry later"],
      [new RepoError({ operation: "find", message: "registrar database: find failed", transient: false }), 500, "registrar database: find failed"]
    ]
    const statusOf = { BadRequest: 400, Forbidden: 403, NotFound: 404, InternalError: 500, ServiceUnavailable: 503 } as const
    it("for every domain error", () => {
      for (const [error, status, text] of cases) {
        const http = httpErrorOf(error as Parameters<typeof httpErrorOf>[0])
        expect([(error as { _tag: string })._tag, statusOf[http._tag], http.message]).toEqual([(error as { _tag: string })._tag, status, text])
      }
    })
  })
})
