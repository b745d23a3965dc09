/**
 * Registration with the registrar (push-model.md §3.4, keylime-wire.md §5): GET /version to pick
 * the API version, POST /v<ver>/agents/<id> with EK, EK certificate, AK, mTLS certificate and
 * contact address, ActivateCredential on the returned blob, PUT …/activate with
 * auth_tag = hex HMAC-SHA384(base64(secret), id), through the typed client of the registrar's own
 * RegistrarApi (no envelope declared twice). Unreachable registrars and 5xx answers are retried with
 * exponential backoff; a 4xx answer is final.
 */
import { HttpApiClient, HttpClientError } from "@effect/platform"
import { Data, Duration, Effect, Either, Option, Schedule, Schema } from "effect"
import { AgentId, toBase64 } from "../../schemas/Common.js"
import { activationAuthTag } from "../keys/index.js"
import { decodeCredentialFile } from "../tpm/credential.js"
import { RegisterRequest } from "../../schemas/Registrar.js"
import { describeParseError } from "../http/envelope.js"
import { RegistrarApi } from "../registrar/Api.js"
import { type Ak, Tpm } from "../tpm/Tpm.js"

export class RegistrationError extends Data.TaggedError("RegistrationError")<{
  readonly step: "version" | "register" | "activate"
  /** true for network failures, timeouts and 5xx answers: worth retrying. */
  readonly transient: boolean
  readonly message: string
}> {}

export interface RegistrationRequest {
  readonly registrarUrl: string
  readonly agentId: string
  readonly ekPublic: Uint8Array
  readonly ekCertificate: Option.Option<Uint8Array>
  readonly ak: Ak
  /** The pull agent's HTTPS certificate; null for the push agent, which listens on no port. */
  readonly mtlsCert: string | null
  readonly contactIp: string
  readonly contactPort: number
  /** API versions this agent speaks, oldest first. */
  readonly versions: ReadonlyArray<string>
}

export interface RetryPolicy {
  readonly initialDelay: Duration.DurationInput
  readonly maxDelay: Duration.DurationInput
  /** Unset: retry for as long as the registrar stays unreachable. */
  readonly maxRetries?: number
}

export const defaultRetry: RetryPolicy = { initialDelay: "1 second", maxDelay: "60 seconds" }

const b64 = (b: Uint8Array): string => toBase64(b)

/** Newest version both sides speak; the agent's newest when the registrar does not say. */
export const chooseVersion = (ours: ReadonlyArray<string>, theirs: ReadonlyArray<string>): string | undefined => {
  for (let i = ours.length - 1; i >= 0; i--) if (theirs.includes(ours[i]!)) return ours[i]
  return undefined
}

const STATUS = { BadRequest: 400, Forbidden: 403, NotFound: 404, InternalError: 500, ServiceUnavailable: 503 } as const

/**
 * One call of the typed registrar client, with a timeout, its failures as RegistrationError:
 * unreachable, timed out, 5xx, 408 and 429 are transient; the registrar's refusals (the envelope's
 * status text) and unexpected answers are final.
 */
const step = <A, E, R>(name: RegistrationError["step"], where: string, call: Effect.Effect<A, E, R>) =>
  call.pipe(
    Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new RegistrationError({ step: name, transient: true, message: `${where}: timed out` }) }),
    Effect.mapError((e: unknown): RegistrationError => {
      if (e instanceof RegistrationError) return e
      const tag = (e as { readonly _tag?: string })._tag
      if (tag !== undefined && tag in STATUS) {
        const status = STATUS[tag as keyof typeof STATUS]
        return new RegistrationError({ step: name, transient: status >= 500, message: `${where} answered ${status}: ${(e as { message: string }).message}` })
      }
      if (HttpClientError.isHttpClientError(e)) {
        if (e._tag === "RequestError") return new RegistrationError({ step: name, transient: true, message: `${where}: ${e.message}` })
        const status = e.response.status
        // a body that could not be read whole (the registrar died or the connection was cut while
        // it answered) is worth asking again; one read whole that is not what a registrar sends is not
        const cut = e.reason === "Decode" && !(e.cause instanceof SyntaxError)
        return new RegistrationError({
          step: name,
          transient: cut || (e.reason === "StatusCode" && (status >= 500 || status === 408 || status === 429)),
          message: `${where} answered ${status}${cut ? ", but its body was cut short" : e.reason === "Decode" ? " with an unexpected body" : ""}`
        })
      }
      return new RegistrationError({ step: name, transient: false, message: `${where}: unexpected answer: ${e instanceof Error ? e.message : String(e)}` })
    })
  )

/** One attempt at the whole exchange; returns the API version used. */
export const registerOnce = Effect.fn("Agent.register")(function*(r: RegistrationRequest) {
  const tpm = yield* Tpm
  const base = r.registrarUrl.replace(/\/+$/, "")
  const agentId = yield* Either.match(Schema.decodeEither(AgentId)(r.agentId), {
    onLeft: () => Effect.fail(new RegistrationError({ step: "register", transient: false, message: `agent id '${r.agentId}' cannot be registered: letters, digits, '-', '_' and '.' only` })),
    onRight: Effect.succeed
  })
  const root = yield* HttpApiClient.make(RegistrarApi, { baseUrl: base })
  const info = yield* step("version", `GET ${base}/version`, root.agents.version())
  const version = chooseVersion(r.versions, info.supported_versions.length > 0 ? info.supported_versions : [info.current_version]) ??
    r.versions[r.versions.length - 1]!
  const api = yield* HttpApiClient.make(RegistrarApi, { baseUrl: `${base}/v${version}` })
  const agentUrl = `${base}/v${version}/agents/${agentId}`
  // checked against the registrar's own schema before sending: a bad contact address is our error, said here
  const payload = yield* Schema.decodeUnknown(RegisterRequest)({
    ek_tpm: b64(r.ekPublic),
    ekcert: Option.match(r.ekCertificate, { onNone: () => null, onSome: b64 }),
    aik_tpm: b64(r.ak.public),
    mtls_cert: r.mtlsCert,
    ip: r.contactIp,
    port: r.contactPort
  }).pipe(
    Effect.mapError((e) => new RegistrationError({ step: "register", transient: false, message: `registration body: ${describeParseError(e)}` }))
  )
  const { blob } = yield* step("register", `POST ${agentUrl}`, api.agents.register({ path: { agent_id: agentId }, payload }))
  yield* Effect.logInfo(`registered with registrar at ${base} (API ${version}); activating the AK`)
  const credential = yield* Either.match(decodeCredentialFile(new Uint8Array(Buffer.from(blob, "base64"))), {
    onLeft: (e) => Effect.fail(new RegistrationError({ step: "activate", transient: false, message: `the registrar's blob is not a credential file: ${e.message}` })),
    onRight: Effect.succeed
  })
  const secret = yield* tpm.activateCredential(r.ak, credential).pipe(
    Effect.mapError((e) => new RegistrationError({ step: "activate", transient: false, message: `ActivateCredential failed: ${e.message}` }))
  )
  yield* step("activate", `PUT ${agentUrl}/activate`, api.agents.activate({
    path: { agent_id: agentId },
    payload: { auth_tag: activationAuthTag(secret, r.agentId) }
  }))
  yield* Effect.logInfo(`activated with registrar at ${base}: agent ${r.agentId} proved its AK is resident with its EK`)
  return version
})

export const retrySchedule = (p: RetryPolicy) => {
  const base = Schedule.exponential(p.initialDelay, 2).pipe(Schedule.union(Schedule.spaced(p.maxDelay)))
  return p.maxRetries === undefined ? base : base.pipe(Schedule.intersect(Schedule.recurs(p.maxRetries)))
}

/** Registers, retrying while the registrar is unreachable (logging each failed attempt). */
export const register = (r: RegistrationRequest, policy: RetryPolicy = defaultRetry) =>
  registerOnce(r).pipe(
    Effect.tapError((e) =>
      e.transient
        ? Effect.logWarning(`registrar not reachable (${e.message}); retrying with backoff`)
        : Effect.logError(`registration failed: ${e.message}`)
    ),
    Effect.retry({ schedule: retrySchedule(policy), while: (e) => e.transient })
  )
