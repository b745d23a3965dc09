/**
 * A push agent of the fleet, without sockets: the cycle of src/push-agent/PushAgent.ts (PoP
 * session, phase 1, phase 2, sleep for the interval the verifier names) against the verifier's push
 * domain services (Sessions, Attestations) called directly, with the evidence src/push-agent's own
 * builder makes (popProof, capabilitiesOf, collectEvidence). Each refusal is met as the agent meets
 * the HTTP answer the verifier's v3 layer gives it (push/Http.ts): 429 and 503 wait their
 * Retry-After, an unavailable database 503 with Retry-After 2, a refused token opens a new
 * session at once, other refusals wait the attestation interval, a 500 or no answer backs off
 * (push-agent/backoff.ts). A cut network gives no answer for the agent's 30 s request timeout.
 */
import { Duration, Effect, Option, Random } from "effect"
import { agentSection } from "../config/sections.js"
import { sectionDefaults } from "../config/load.js"
import { type BackoffOptions, backoffDelayMs } from "../push-agent/backoff.js"
import { capabilitiesOf, collectEvidence, popProof, type PushIdentity } from "../push-agent/evidence.js"
import { Attestations, requestedOf, Sessions } from "../verifier/index.js"
import type { SimulatedAgent } from "./simulatedAgent.js"

/** The push agent's per-request timeout (PushAgent.ts). */
const REQUEST_TIMEOUT = Duration.seconds(30)

const defaults = sectionDefaults(agentSection)

/** The push agent's configured backoff (the `[agent]` section's defaults). */
export const defaultPushBackoff: BackoffOptions = {
  initialMs: defaults.exponential_backoff_initial_delay,
  maxMs: defaults.exponential_backoff_max_delay,
  multiplier: defaults.exponential_backoff_multiplier,
  maxRetries: defaults.exponential_backoff_max_retries,
  jitter: defaults.exponential_backoff_jitter
}

/** How a step ended when it did not succeed: the wait before the next, as the agent decides it. */
type Outcome =
  | { readonly _tag: "RetryAfter"; readonly seconds: number }
  | { readonly _tag: "NewSession" }
  | { readonly _tag: "Backoff" }
  | { readonly _tag: "Interval" }

const retryAfter = (seconds: number): Outcome => ({ _tag: "RetryAfter", seconds })

/** A domain refusal → what the agent does on the HTTP answer push/Http.ts gives for it. */
const outcomeOf = (e: { readonly _tag: string; readonly waitSeconds?: number; readonly retryAfterSeconds?: number }): Outcome => {
  switch (e._tag) {
    case "PrematureAttestation":
    case "VerificationInProgress":
      return retryAfter(e.waitSeconds ?? 1)
    case "SessionRateLimited":
      return retryAfter(e.retryAfterSeconds ?? 1)
    case "VerifierStoreError":
      return retryAfter(2)
    case "TokenRefused":
      return { _tag: "NewSession" }
    default:
      return { _tag: "Interval" }
  }
}

export interface PushAgentRun {
  readonly agent: SimulatedAgent
  /** The agent's own client address (the verifier limits session creations per address). */
  readonly address: string
  readonly intervalSeconds: number
  readonly backoff: BackoffOptions
}

/** Runs the agent's cycle until interrupted. */
export const runInProcessPushAgent = (o: PushAgentRun) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const attestations = yield* Attestations
    const { agent } = o
    const agentId = agent.agentId
    const id: PushIdentity = { ak: agent.ak, banks: [agent.ak.options.hash] }
    let token = Option.none<string>()
    let failures = 0

    /** A request to the verifier: no answer while the network is down; a defect is its 500. */
    const request = <A, E extends { readonly _tag: string }>(call: Effect.Effect<A, E>): Effect.Effect<A, Outcome> =>
      Effect.suspend(() =>
        agent.network.down
          ? Effect.zipRight(Effect.sleep(REQUEST_TIMEOUT), Effect.fail<Outcome>({ _tag: "Backoff" }))
          : call.pipe(
            Effect.mapError(outcomeOf),
            Effect.catchAllDefect(() => Effect.fail<Outcome>({ _tag: "Backoff" }))
          )
      )

    const openSession = Effect.gen(function*() {
      const session = yield* request(sessions.create({ agentId, methods: [{ authentication_class: "pop", authentication_type: "tpm_pop" }], clientAddress: o.address }))
      const proof = yield* popProof(agent.tpm, id, session.challenge).pipe(Effect.mapError((): Outcome => ({ _tag: "Backoff" })))
      const proved = yield* request(sessions.prove({ sessionId: session.session_id, agentId, proof, clientAddress: o.address }))
      // 200 with evaluation fail: not enrolled (yet), or the challenge expired
      if (proved._tag === "Fail" || proved.token === undefined) return yield* Effect.fail<Outcome>({ _tag: "Interval" })
      token = Option.some(proved.token)
      return proved.token
    })

    /** One attestation; the seconds the verifier asks to wait before the next. */
    const cycle = Effect.gen(function*() {
      const bearer = Option.isSome(token) ? token.value : yield* openSession
      // every request authenticates with its token first (push/auth.ts)
      const session = yield* request(sessions.checkToken(bearer))
      const caps = yield* capabilitiesOf(id, agent.source)
      const created = yield* request(attestations.create(agentId, { evidenceSupported: caps.evidenceSupported, bootTime: caps.bootTime }, session.session_id))
      const evidence = yield* collectEvidence(agent.tpm, id, agent.source, requestedOf(created)).pipe(Effect.mapError((): Outcome => ({ _tag: "Backoff" })))
      const done = yield* request(attestations.submit(agentId, created.idx, evidence, session.session_id))
      return done.secondsToNext
    })

    const step = Effect.gen(function*() {
      const outcome = yield* Effect.either(cycle)
      if (outcome._tag === "Right") {
        failures = 0
        return yield* Effect.sleep(Duration.seconds(outcome.right))
      }
      const e = outcome.left
      if (e._tag === "NewSession") {
        token = Option.none()
        return
      }
      failures++
      const wait = e._tag === "RetryAfter"
        ? e.seconds * 1000
        : e._tag === "Backoff"
        ? backoffDelayMs(o.backoff, failures, yield* Random.next)
        : o.intervalSeconds * 1000
      yield* Effect.sleep(Duration.millis(wait))
    })
    return yield* Effect.forever(step)
  }).pipe(Effect.annotateLogs("agent_id", o.agent.agentId))
