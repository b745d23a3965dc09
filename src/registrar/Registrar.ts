/**
 * The registrar's domain service: registration (EK certificate chain, AK checks, MakeCredential),
 * activation (HMAC over the agent id with the wrapped secret), and the admin reads. It fails with
 * domain errors carrying the facts (errors.ts; the database's RepoError says whether it was
 * transient); Http.ts chooses status and text. Every change is logged with the agent id, and every
 * registration and activation is counted by result (src/ops/metrics.ts).
 */
import { Context, Effect, Either, Option } from "effect"
import type { AgentRecord, RegisterRequest } from "../../schemas/Registrar.js"
import { toBase64 } from "../../schemas/Common.js"
import { type TrustStore, validateChain } from "../pki/chain.js"
import {
  ActivationRaced,
  AgentNotActivated,
  AgentNotFound,
  AuthTagMismatch,
  ConcurrentRegistration,
  DifferentTpmIdentity,
  InvalidRegistrationData
} from "./errors.js"
import {
  authTagMatches,
  makeChallenge,
  parseRegistration,
  type InvalidRegistration,
  type TpmIdentityPolicy
} from "./registration.js"
import { RegistrarRepo } from "./Repo.js"
import { type ActivationResult, recordActivation, recordRegistration, type RegistrationResult } from "../ops/metrics.js"
import type { RegistrarError } from "./errors.js"

/** The metrics result of a refused registration. */
const registrationRefusal = (e: RegistrarError): RegistrationResult =>
  e._tag === "InvalidRegistrationData"
    ? "invalid_data"
    : e._tag === "DifferentTpmIdentity"
    ? "different_identity"
    : e._tag === "ConcurrentRegistration"
    ? "concurrent"
    : "database_error"

/** The metrics result of a refused activation. */
const activationRefusal = (e: RegistrarError): ActivationResult =>
  e._tag === "AgentNotFound"
    ? "not_found"
    : e._tag === "AuthTagMismatch"
    ? "auth_tag_mismatch"
    : e._tag === "ActivationRaced"
    ? "raced"
    : "database_error"

/** TPM manufacturer CA certificates that EK certificates must chain to. */
export class EkTrustStore extends Context.Tag("attest/registrar/EkTrustStore")<EkTrustStore, TrustStore>() {}

export interface RegistrarSettingsShape {
  readonly tpmIdentity: TpmIdentityPolicy
}
export class RegistrarSettings extends Context.Tag("attest/registrar/RegistrarSettings")<
  RegistrarSettings,
  RegistrarSettingsShape
>() {}

export class Registrar extends Effect.Service<Registrar>()("attest/registrar/Registrar", {
  dependencies: [RegistrarRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* RegistrarRepo
    const trust = yield* EkTrustStore
    const settings = yield* RegistrarSettings

    const badData = (agentId: string) => (e: InvalidRegistration) =>
      new InvalidRegistrationData({ agentId, field: e.field, reason: e.problem })

    const register = Effect.fn("Registrar.register")(function*(agentId: string, body: RegisterRequest) {
      const parsed = parseRegistration(body, settings.tpmIdentity)
      if (Either.isLeft(parsed)) return yield* badData(agentId)(parsed.left)
      const reg = parsed.right
      if (reg.ekCert !== null) {
        yield* validateChain(reg.ekCert, trust).pipe(
          Effect.mapError((e) =>
            new InvalidRegistrationData({ agentId, field: "ekcert", reason: `does not chain to a trusted TPM manufacturer CA: ${e.message}` })
          )
        )
      }
      const ekTpm = Buffer.from(reg.ekTpm).toString("base64")
      const akTpm = Buffer.from(reg.akTpm).toString("base64")
      const existing = yield* repo.find(agentId)
      // identity first, as Keylime: another TPM under a known id is refused whatever else is wrong
      if (Option.isSome(existing) && (existing.value.ek_tpm !== ekTpm || existing.value.aik_tpm !== akTpm)) {
        yield* Effect.logWarning(`Agent ${agentId} re-registration refused: different EK or AK`)
        return yield* new DifferentTpmIdentity({ agentId })
      }
      const challenge = makeChallenge(reg)
      if (Either.isLeft(challenge)) return yield* badData(agentId)(challenge.left)
      const data = {
        agent_id: agentId,
        ek_tpm: ekTpm,
        ekcert: reg.ekCert === null ? null : Buffer.from(reg.ekCert).toString("base64"),
        aik_tpm: akTpm,
        ip: body.ip ?? null,
        port: body.port ?? null,
        mtls_cert: reg.mtlsCert,
        challenge_key: challenge.right.key
      }
      if (Option.isNone(existing)) {
        const inserted = yield* repo.insert(data)
        if (!inserted) return yield* new ConcurrentRegistration({ agentId })
        yield* Effect.logInfo(`Agent ${agentId} registered (EK ${reg.ekCert === null ? "without" : "with"} certificate)`)
        yield* recordRegistration("registered")
      } else {
        const outcome = yield* repo.reRegister(data)
        if (outcome._tag === "DifferentIdentity") {
          yield* Effect.logWarning(`Agent ${agentId} re-registration refused: different EK or AK`)
          return yield* new DifferentTpmIdentity({ agentId })
        }
        if (outcome._tag === "Missing") return yield* new ConcurrentRegistration({ agentId })
        yield* Effect.logInfo(
          outcome._tag === "Staged"
            ? `Agent ${agentId} re-registered while active: staged until activation, the active record is unchanged`
            : `Agent ${agentId} re-registered (regcount ${outcome.regcount}), awaiting activation`
        )
        yield* recordRegistration(outcome._tag === "Staged" ? "staged" : "re_registered")
      }
      return { blob: toBase64(challenge.right.blob) }
    }, Effect.tapError((e) => recordRegistration(registrationRefusal(e))))

    /**
     * Activation (public: anyone may call it). A matching auth_tag activates a first registration or
     * promotes a staged re-registration. A wrong one deletes only a first registration that was
     * never activated (Keylime's behaviour); an active record and its staged re-registration are
     * left as they are (a stale or forged tag cannot cancel the agent's own re-registration), and
     * the attempt is logged with the caller's address.
     */
    const activate = Effect.fn("Registrar.activate")(function*(agentId: string, authTag: string, caller: string) {
      const found = yield* repo.find(agentId)
      if (Option.isNone(found)) return yield* new AgentNotFound({ agentId })
      const row = found.value
      const refused = Effect.zipRight(
        Effect.logWarning(`Agent ${agentId}: activation with a wrong auth_tag from ${caller} refused; the active registration is unchanged`),
        Effect.fail(new AuthTagMismatch({ agentId, authTag, caller, registrationDeleted: false }))
      )

      if (row.pending_challenge_key !== null) {
        const pendingKey = row.pending_challenge_key
        if (!authTagMatches(authTag, pendingKey, agentId)) return yield* refused
        const promoted = yield* repo.promote(agentId, pendingKey)
        if (Option.isNone(promoted)) return yield* new ActivationRaced({ agentId })
        yield* Effect.logInfo(`Agent ${agentId} re-registration activated (regcount ${promoted.value}); contact data replaced`)
        return yield* recordActivation("promoted")
      }
      if (row.active) {
        // nothing staged: the tag of the activation already done is accepted again, anything else refused
        if (!authTagMatches(authTag, row.challenge_key, agentId)) return yield* refused
        return yield* recordActivation("repeated")
      }
      if (!authTagMatches(authTag, row.challenge_key, agentId)) {
        // Keylime removes a first registration: the agent must start over with a fresh challenge
        const removed = yield* repo.removeUnactivated(agentId, row.challenge_key)
        if (!removed) return yield* refused
        yield* Effect.logWarning(`Agent ${agentId} failed activation (auth_tag mismatch, from ${caller}); registration deleted`)
        return yield* new AuthTagMismatch({ agentId, authTag, caller, registrationDeleted: true })
      }
      const done = yield* repo.activate(agentId, row.challenge_key)
      if (!done) return yield* new ActivationRaced({ agentId })
      yield* Effect.logInfo(`Agent ${agentId} activated`)
      yield* recordActivation("activated")
    }, Effect.tapError((e) => recordActivation(activationRefusal(e))))

    const show = Effect.fn("Registrar.show")(function*(agentId: string) {
      const row = yield* repo.find(agentId)
      if (Option.isNone(row)) return yield* new AgentNotFound({ agentId })
      if (!row.value.active) return yield* new AgentNotActivated({ agentId })
      const r = row.value
      const record: AgentRecord = {
        agent_id: r.agent_id,
        ek_tpm: r.ek_tpm,
        ekcert: r.ekcert,
        aik_tpm: r.aik_tpm,
        ip: r.ip,
        port: r.port,
        mtls_cert: r.mtls_cert,
        regcount: r.regcount
      }
      return record
    })

    const list = Effect.fn("Registrar.list")(function*() {
      const uuids = yield* repo.listIds()
      return { uuids }
    })

    const remove = Effect.fn("Registrar.remove")(function*(agentId: string) {
      const removed = yield* repo.remove(agentId)
      if (!removed) return yield* new AgentNotFound({ agentId })
      yield* Effect.logInfo(`Agent ${agentId} deleted`)
    })

    return { register, activate, show, list, remove } as const
  })
}) {}
