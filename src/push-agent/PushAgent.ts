/**
 * The push agent (spec §3.2; push-model.md §3): no listening port. It establishes its TPM identity
 * and registers with the registrar exactly as the pull agent does (src/agent/tpmIdentity.ts,
 * Registration.ts), then runs the state machine as one Effect program:
 *
 *   Unregistered → Registered → Negotiating → Attesting → (sleep meta.seconds_to_next_attestation) → Negotiating …
 *   RegistrationFailed / AttestationFailed → backoff (Retry-After honoured) → retry
 *
 * The token comes from a PoP session (TPM2_Certify over the challenge) and is dropped on 401/403,
 * after which the next step opens a new session. 5xx, 408 and 429 and network errors are retried
 * with backoff; other 4xx go to AttestationFailed and are retried after the attestation interval.
 * Only IMA entries the verifier has not seen are sent (it names the starting offset). The verifier's
 * certificate is checked against its CA; no client certificate is presented.
 */
import { Clock, Duration, Effect, Option, Random, Ref } from "effect"
import * as https from "node:https"
import type { EvidenceRequested } from "../../schemas/Push.js"
import { MeasurementSource } from "../agent/measurements/MeasurementSource.js"
import { register, type RetryPolicy } from "../agent/Registration.js"
import { establishTpmIdentity } from "../agent/tpmIdentity.js"
import { rawRequest } from "../http/client.js"
import { JSON_API_MEDIA_TYPE } from "../http/jsonapi.js"
import type { AkOptions, HashAlg, KeyAlg } from "../tpm/Tpm.js"
import { Tpm } from "../tpm/Tpm.js"
import { type BackoffOptions, backoffDelayMs, retryAfterMs } from "./backoff.js"
import { capabilitiesOf, collectEvidence, popProof, type PushIdentity } from "./evidence.js"
import { capabilitiesAccepted } from "./testHooks.js"

export interface PushAgentOptions {
  readonly agentId: string
  readonly dataDir: string
  /** e.g. http://127.0.0.1:8890; unset: no registration (the agent was registered before). */
  readonly registrarUrl?: string | undefined
  readonly registrarRetry?: RetryPolicy
  readonly contactIp: string
  readonly contactPort: number
  readonly verifierUrl: string
  /** PEM of the CA the verifier's certificate must chain to. */
  readonly verifierCa: string
  readonly attestationIntervalSeconds: number
  readonly backoff: BackoffOptions
  readonly ekAlg?: KeyAlg
  readonly ak?: AkOptions
  /** PCR banks offered; default the AK's hash. */
  readonly banks?: ReadonlyArray<HashAlg>
  /** Cycles to run (tests, benchmarks); default forever. */
  readonly cycles?: number
}

export interface PushAgentStats {
  /** Evidence sent (PATCH); the verifier may judge one whose 202 never arrived (it died in between). */
  readonly submitted: number
  /** Evidence the verifier answered 202 to. */
  readonly accepted: number
  readonly refused: number
  readonly sessions: number
  readonly lastStatus: number
}

interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly json: any
}

/** A step that did not succeed: how long to wait before the next, and whether the token must go. */
class StepFailed {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly retryAfterMs: number | undefined,
    readonly dropToken: boolean,
    readonly transient: boolean,
    /** The verifier refused a session: the agent is not enrolled there (yet), or its challenge expired. */
    readonly notEnrolled = false
  ) {}
}

const defaultAk: AkOptions = { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" }

export const runPushAgent = (o: PushAgentOptions, stats?: Ref.Ref<PushAgentStats>) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const source = yield* MeasurementSource
    const identity = yield* establishTpmIdentity({ agentId: o.agentId, dataDir: o.dataDir, ekAlg: o.ekAlg ?? "rsa", ak: o.ak ?? defaultAk })
    const agentId = identity.agentId
    const id: PushIdentity = { ak: identity.ak, banks: o.banks ?? [identity.ak.options.hash] }
    const counters = stats ?? (yield* Ref.make<PushAgentStats>({ submitted: 0, accepted: 0, refused: 0, sessions: 0, lastStatus: 0 }))

    if (o.registrarUrl !== undefined) {
      yield* register({
        registrarUrl: o.registrarUrl,
        agentId,
        ekPublic: identity.ekPublic,
        ekCertificate: identity.ekCertificate,
        ak: identity.ak,
        mtlsCert: null,
        contactIp: o.contactIp,
        contactPort: o.contactPort,
        versions: ["2.1", "2.2", "2.3", "2.4", "2.5", "2.6"]
      }, o.registrarRetry)
    }

    const base = o.verifierUrl.replace(/\/+$/, "")
    // one kept-alive TLS connection to the verifier: a handshake per request would cost both sides
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() => new https.Agent({ keepAlive: true, maxSockets: 1, ca: o.verifierCa })),
      (a) => Effect.sync(() => a.destroy())
    )
    const call = (method: string, path: string, body: unknown, token?: string) =>
      rawRequest({
        method,
        baseUrl: base,
        path,
        tls: { ca: o.verifierCa },
        agent: connection,
        headers: {
          "content-type": JSON_API_MEDIA_TYPE,
          accept: JSON_API_MEDIA_TYPE,
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
        },
        body: JSON.stringify(body)
      }).pipe(
        Effect.timeout("30 seconds"),
        Effect.map((r): Reply => {
          let json: unknown
          try {
            json = r.body === "" ? undefined : JSON.parse(r.body)
          } catch {
            json = undefined
          }
          return { status: r.status, headers: r.headers, json }
        }),
        Effect.catchAll((e) => Effect.fail(new StepFailed(0, `${method} ${path}: ${"message" in e ? e.message : String(e)}`, undefined, false, true))),
        Effect.tap((r) => Ref.update(counters, (c) => ({ ...c, lastStatus: r.status })))
      )

    /**
     * A step the verifier refused. A 401/403 to a request that carried the token drops the token (the
     * next cycle opens a session at once); to the session's own steps it is the proof that was
     * refused (e.g. the verifier holds another AK), which a new session at once would only repeat:
     * that waits like any refusal (found by bench/soak.ts: hundreds of proofs a second until 429).
     */
    const refused = (step: string, r: Reply, sentToken: boolean) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const detail = r.json?.errors?.[0]?.detail ?? ""
        return yield* Effect.fail(
          new StepFailed(r.status, `${step} answered ${r.status}${detail === "" ? "" : `: ${detail}`}`, retryAfterMs(r.headers["retry-after"], now), sentToken && (r.status === 401 || r.status === 403), r.status >= 500 || r.status === 408 || r.status === 429)
        )
      })

    const openSession = Effect.gen(function*() {
      const created = yield* call("POST", "/v3.0/sessions", {
        data: { type: "session", attributes: { agent_id: agentId, authentication_supported: [{ authentication_class: "pop", authentication_type: "tpm_pop" }] } }
      })
      if (created.status !== 200) return yield* refused("POST /sessions", created, false)
      const sessionId = String(created.json.data.id)
      const challenge = String(created.json.data.attributes.authentication_requested[0].chosen_parameters.challenge)
      const proof = yield* popProof(tpm, id, challenge).pipe(Effect.mapError((e) => new StepFailed(0, `TPM2_Certify failed: ${e.message}`, undefined, false, true)))
      const proved = yield* call("PATCH", `/v3.0/sessions/${sessionId}`, {
        data: { type: "session", id: sessionId, attributes: { agent_id: agentId, authentication_provided: [{ authentication_class: "pop", authentication_type: "tpm_pop", data: proof }] } }
      })
      const token = proved.json?.data?.attributes?.token
      // Keylime answers 200 with evaluation "fail" when the agent is not enrolled (or the challenge expired)
      if (proved.status === 200 && proved.json?.data?.attributes?.evaluation === "fail") {
        return yield* Effect.fail(new StepFailed(200, `PoP session refused (evaluation fail: not enrolled at the verifier, or the challenge expired)`, undefined, false, false, true))
      }
      if (proved.status !== 200 || typeof token !== "string") return yield* refused(`PATCH /sessions/${sessionId}`, proved, false)
      yield* Ref.update(counters, (c) => ({ ...c, sessions: c.sessions + 1 }))
      yield* Effect.logInfo("PoP session authenticated: bearer token obtained")
      return token
    })

    const tokenRef = yield* Ref.make(Option.none<string>())
    const token = Effect.flatMap(Ref.get(tokenRef), Option.match({
      onSome: Effect.succeed,
      onNone: () => Effect.tap(openSession, (t) => Ref.set(tokenRef, Option.some(t)))
    }))

    /** Negotiating then Attesting: the seconds the verifier asks to wait before the next cycle. */
    const cycle = Effect.gen(function*() {
      const t = yield* token
      const caps = yield* capabilitiesOf(id, source).pipe(Effect.mapError((e) => new StepFailed(0, `reading measurements: ${String(e)}`, undefined, false, true)))
      const path = `/v3.0/agents/${agentId}/attestations`
      const created = yield* call("POST", path, { data: { type: "attestation", attributes: { evidence_supported: caps.evidenceSupported, system_info: { boot_time: caps.bootTime } } } }, t)
      const location = created.headers["location"]
      if (created.status !== 201 || location === undefined) return yield* refused(`POST ${path}`, created, true)
      yield* capabilitiesAccepted
      const requested = created.json.data.attributes.evidence_requested as ReadonlyArray<EvidenceRequested>
      const evidence = yield* collectEvidence(tpm, id, source, requested).pipe(Effect.mapError((e) => new StepFailed(0, `collecting evidence: ${String(e)}`, undefined, false, true)))
      yield* Ref.update(counters, (c) => ({ ...c, submitted: c.submitted + 1 }))
      const submitted = yield* call("PATCH", location, { data: { type: "attestation", attributes: { evidence_collected: evidence } } }, t)
      if (submitted.status !== 202) return yield* refused(`PATCH ${location}`, submitted, true)
      yield* Ref.update(counters, (c) => ({ ...c, accepted: c.accepted + 1 }))
      const next = submitted.json?.meta?.seconds_to_next_attestation
      yield* Effect.logDebug(`evidence accepted for ${location}`)
      return typeof next === "number" && next >= 0 ? next : o.attestationIntervalSeconds
    })

    const failures = yield* Ref.make(0)
    // before its enrolment (a push agent is started, then enrolled with the tenant) the verifier
    // refuses its sessions: said once as waiting, and once more when it is enrolled
    const waitingForEnrolment = yield* Ref.make(false)
    const loop = Effect.gen(function*() {
      const outcome = yield* Effect.either(cycle)
      if (outcome._tag === "Right") {
        yield* Ref.set(failures, 0)
        if (yield* Ref.getAndSet(waitingForEnrolment, false)) yield* Effect.logInfo(`enrolled at the verifier ${base}: attesting`)
        yield* Effect.sleep(Duration.seconds(outcome.right))
        return
      }
      const e = outcome.left
      yield* Ref.update(counters, (c) => ({ ...c, refused: c.refused + 1 }))
      if (e.dropToken) {
        yield* Ref.set(tokenRef, Option.none())
        // Keylime's agent goes straight back to Negotiating after a 401: the token was the problem
        if (e.status === 401) {
          yield* Effect.logInfo(`${e.detail}; opening a new session`)
          return
        }
      }
      const n = yield* Ref.updateAndGet(failures, (k) => k + 1)
      const random = yield* Random.next
      const wait = e.retryAfterMs ?? (e.transient ? backoffDelayMs(o.backoff, n, random) : o.attestationIntervalSeconds * 1000)
      if (e.notEnrolled && (yield* Ref.get(counters)).accepted === 0) {
        // never attested: the verifier does not hold it yet
        if (!(yield* Ref.getAndSet(waitingForEnrolment, true))) {
          yield* Effect.logInfo(`waiting for enrolment at the verifier ${base} (it refuses a session to an agent it does not hold); asking again every ${wait / 1000} s`)
        }
      } else {
        yield* Effect.logWarning(`attestation failed (${e.detail}); retrying in ${wait} ms`)
      }
      yield* Effect.sleep(Duration.millis(wait))
    })
    yield* (o.cycles === undefined ? Effect.forever(loop) : Effect.repeatN(loop, o.cycles - 1))
    return yield* Ref.get(counters)
  }).pipe(Effect.scoped, Effect.annotateLogs("agent_id", o.agentId))
