/**
 * One agent of the fleet, inside the test's process: a seeded simulated TPM (src/tpm/simulator), a
 * simulated machine that measured its boot and files into it (src/agent/measurements), its EK and
 * AK, and for a pull agent the agent's own request app (src/agent/Http.ts over Quotes.ts) that the
 * in-process AgentClient asks. It registers and activates with the registrar's domain service as
 * the real agent does over HTTP: the registrar checks the EK certificate, makes the credential, the
 * TPM activates it, the auth tag proves the AK sits beside the EK.
 *
 * Departures from a real agent, each for speed and none visible in a verdict: EK and pull AK are
 * ECC (a deterministic RSA key costs ~0.3 s; a push agent's AK is RSA, as the PoP proof requires),
 * and the agents share one NK derived from the fleet's seed (PCR 16 still binds it in every quote).
 */
import { NodeFileSystem } from "@effect/platform-node"
import type { HttpApp } from "@effect/platform"
import { createHash } from "node:crypto"
import { Context, Data, Effect, Either, Layer, Option, Schema, type Scope } from "effect"
import { RegisterRequest } from "../../schemas/Registrar.js"
import { BootstrapKeys, make as makeKeys } from "../agent/BootstrapKeys.js"
import { makeAgentApp } from "../agent/Http.js"
import { AgentIdentity } from "../agent/Identity.js"
import { MeasurementSource, type MeasurementSourceShape } from "../agent/measurements/MeasurementSource.js"
import { layer as simulatedMachine, SimulatedMachine, type SimulatedMachineShape } from "../agent/measurements/SimulatedMachine.js"
import { DATA_PCR, make as makeQuotes, Quotes } from "../agent/Quotes.js"
import { activationAuthTag, type Nk } from "../keys/index.js"
import { Registrar } from "../registrar/Registrar.js"
import { decodeCredentialFile } from "../tpm/credential.js"
import { makeSimulator } from "../tpm/simulator/Simulator.js"
import { type Ak, type AkOptions, Tpm, type TpmShape } from "../tpm/Tpm.js"
import type { AgentModel } from "./verdictLog.js"

/** A step of an agent's start that failed: which agent, which step, why. */
export class FleetSetupError extends Data.TaggedError("FleetSetupError")<{
  readonly agentId: string
  readonly step: string
  readonly reason: string
}> {
  override get message(): string {
    return `fleet agent ${this.agentId}: ${this.step}: ${this.reason}`
  }
}

export interface SimulatedAgent {
  readonly agentId: string
  readonly model: AgentModel
  readonly tpm: TpmShape
  readonly ak: Ak
  readonly machine: SimulatedMachineShape
  readonly source: MeasurementSourceShape
  /** The pull agent's request app (what its HTTPS port serves); undefined for a push agent. */
  readonly app: HttpApp.Default | undefined
  /** Set by the script: the agent's network is down (requests to it, or from it, get no answer). */
  readonly network: { down: boolean }
}

/** The API version the fleet's pull agents are enrolled with. */
export const FLEET_AGENT_API_VERSION = "2.5"

const PULL_AK: AkOptions = { alg: "ecc", bits: 256, hash: "sha256", scheme: "ecdsa" }
/** The push PoP proof is checked as sha256/rsassa (Keylime's fixed scheme). */
const PUSH_AK: AkOptions = { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" }

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

/** An agent's start: TPM, machine, AK, PCR 16, its app (pull), registration and activation. */
export const startAgent = (o: {
  readonly agentId: string
  readonly model: AgentModel
  readonly seed: string
  readonly nk: Nk
}): Effect.Effect<SimulatedAgent, FleetSetupError, Registrar | Scope.Scope> =>
  Effect.gen(function*() {
    const { agentId } = o
    const failed = (step: string) => (e: { readonly message: string }) => new FleetSetupError({ agentId, step, reason: e.message })
    const tpm = yield* makeSimulator({ seed: `${o.seed}/${agentId}` }).pipe(Effect.provide(NodeFileSystem.layer), Effect.mapError(failed("TPM simulator")))
    const machineContext = yield* Layer.build(simulatedMachine({ name: agentId })).pipe(
      Effect.provideService(Tpm, tpm),
      Effect.mapError(failed("simulated machine"))
    )
    const machine = Context.get(machineContext, SimulatedMachine)
    const source = Context.get(machineContext, MeasurementSource)
    const ekPublic = yield* tpm.ekPublic("ecc").pipe(Effect.mapError(failed("EK")))
    const ekCertificate = yield* tpm.ekCertificate("ecc").pipe(Effect.mapError(failed("EK certificate")))
    const ak = yield* tpm.createAk("ecc", o.model === "pull" ? PULL_AK : PUSH_AK).pipe(Effect.mapError(failed("AK")))

    let app: HttpApp.Default | undefined
    if (o.model === "pull") {
      // as src/agent/Agent.ts at start: PCR 16 = H(0 ‖ H(NK PEM)) binds the NK to every quote
      const hash = ak.options.hash
      yield* tpm.pcrReset(DATA_PCR).pipe(Effect.mapError(failed("PCR 16 reset")))
      yield* tpm.pcrExtend(DATA_PCR, [{ hash, digest: new Uint8Array(createHash(hash).update(o.nk.publicPem).digest()) }]).pipe(Effect.mapError(failed("PCR 16 extend")))
      const identity = AgentIdentity.of({ agentId, ak, ekAlg: "ecc", hashAlg: hash, encAlg: "ecc", encBits: 256, signAlg: ak.options.scheme })
      const keys = yield* makeKeys({ agentId, payload: { dir: "/nonexistent/attest-testing", extractZip: false }, nk: o.nk })
      const withKeys = Context.make(AgentIdentity, identity).pipe(
        Context.add(Tpm, tpm),
        Context.add(MeasurementSource, source),
        Context.add(BootstrapKeys, keys)
      )
      const quotes = yield* makeQuotes.pipe(Effect.provide(withKeys))
      app = yield* makeAgentApp({ versions: [FLEET_AGENT_API_VERSION] }).pipe(Effect.provide(Context.add(withKeys, Quotes, quotes)))
    }

    // registration and activation, as src/agent/Registration.ts does them over HTTP
    const registrar = yield* Registrar
    const body = yield* Schema.decodeUnknown(RegisterRequest)({
      ek_tpm: b64(ekPublic),
      ekcert: Option.match(ekCertificate, { onNone: () => null, onSome: b64 }),
      aik_tpm: b64(ak.public),
      mtls_cert: null,
      ip: "127.0.0.1",
      port: 9002
    }).pipe(Effect.mapError(failed("registration body")))
    const { blob } = yield* registrar.register(agentId, body).pipe(Effect.mapError(failed("registration")))
    const credential = yield* Either.match(decodeCredentialFile(new Uint8Array(Buffer.from(blob, "base64"))), {
      onLeft: (e) => Effect.fail(failed("credential")(e)),
      onRight: Effect.succeed
    })
    const secret = yield* tpm.activateCredential(ak, credential).pipe(Effect.mapError(failed("ActivateCredential")))
    yield* registrar.activate(agentId, activationAuthTag(secret, agentId), "attest/testing").pipe(Effect.mapError(failed("activation")))
    return { agentId, model: o.model, tpm, ak, machine, source, app, network: { down: false } }
  })
