/**
 * Registration with the registrar (push-model.md §3.4, keylime-wire.md §5): GET /version to pick
 * the API version, POST /v<ver>/agents/<id> with EK, EK certificate, AK, mTLS certificate and
 * contact address, ActivateCredential on the returned blob, PUT …/activate with
 * auth_tag = hex HMAC-SHA384(base64(secret), id). Unreachable registrars and 5xx answers are
 * retried with exponential backoff; a 4xx answer is final.
 */
import { HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Data, Duration, Effect, Either, Option, Schedule, Schema } from "effect"
import { activationAuthTag } from "../keys/index.js"
import { decodeCredentialFile } from "../tpm/credential.js"
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
  readonly mtlsCert: string
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

const Envelope = <A, I>(results: Schema.Schema<A, I>) =>
  Schema.Struct({ code: Schema.Number, status: Schema.String, results })
const VersionResults = Schema.Struct({ current_version: Schema.String, supported_versions: Schema.optional(Schema.Array(Schema.String)) })
const BlobResults = Schema.Struct({ blob: Schema.String })
const AnyEnvelope = Schema.Struct({ status: Schema.optional(Schema.String) })

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")

/** Newest version both sides speak; the agent's newest when the registrar does not say. */
export const chooseVersion = (ours: ReadonlyArray<string>, theirs: ReadonlyArray<string>): string | undefined => {
  for (let i = ours.length - 1; i >= 0; i--) if (theirs.includes(ours[i]!)) return ours[i]
  return undefined
}

const call = <A, I>(
  step: RegistrationError["step"],
  request: HttpClientRequest.HttpClientRequest,
  results: Schema.Schema<A, I>
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(request).pipe(
      Effect.timeout("10 seconds"),
      Effect.mapError((e) =>
        new RegistrationError({ step, transient: true, message: `${request.method} ${request.url}: ${e._tag === "TimeoutException" ? "timed out" : e.message}` })
      )
    )
    if (response.status !== 200) {
      const body = yield* HttpClientResponse.schemaBodyJson(AnyEnvelope)(response).pipe(Effect.option)
      const status = Option.flatMap(body, (b) => Option.fromNullable(b.status)).pipe(Option.getOrElse(() => ""))
      return yield* new RegistrationError({
        step,
        transient: response.status >= 500 || response.status === 408 || response.status === 429,
        message: `${request.method} ${request.url} answered ${response.status}${status ? `: ${status}` : ""}`
      })
    }
    const body = yield* HttpClientResponse.schemaBodyJson(Envelope(results))(response).pipe(
      Effect.mapError((e) => new RegistrationError({ step, transient: false, message: `${request.url}: unexpected answer: ${e.message}` }))
    )
    return body.results
  }).pipe(Effect.scoped)

/** One attempt at the whole exchange; returns the API version used. */
export const registerOnce = Effect.fn("Agent.register")(function*(r: RegistrationRequest) {
  const tpm = yield* Tpm
  const base = r.registrarUrl.replace(/\/+$/, "")
  const info = yield* call("version", HttpClientRequest.get(`${base}/version`), VersionResults)
  const version = chooseVersion(r.versions, info.supported_versions ?? [info.current_version]) ?? r.versions[r.versions.length - 1]!
  const body = {
    ek_tpm: b64(r.ekPublic),
    ekcert: Option.match(r.ekCertificate, { onNone: () => null, onSome: b64 }),
    aik_tpm: b64(r.ak.public),
    mtls_cert: r.mtlsCert,
    ip: r.contactIp,
    port: r.contactPort
  }
  const { blob } = yield* call(
    "register",
    HttpClientRequest.post(`${base}/v${version}/agents/${r.agentId}`).pipe(HttpClientRequest.bodyUnsafeJson(body)),
    BlobResults
  )
  yield* Effect.logInfo(`registered with registrar at ${base} (API ${version}); activating the AK`)
  const credential = yield* Either.match(decodeCredentialFile(new Uint8Array(Buffer.from(blob, "base64"))), {
    onLeft: (e) => Effect.fail(new RegistrationError({ step: "activate", transient: false, message: `the registrar's blob is not a credential file: ${e.message}` })),
    onRight: Effect.succeed
  })
  const secret = yield* tpm.activateCredential(r.ak, credential).pipe(
    Effect.mapError((e) => new RegistrationError({ step: "activate", transient: false, message: `ActivateCredential failed: ${e.message}` }))
  )
  yield* call(
    "activate",
    HttpClientRequest.put(`${base}/v${version}/agents/${r.agentId}/activate`).pipe(
      HttpClientRequest.bodyUnsafeJson({ auth_tag: activationAuthTag(secret, r.agentId) })
    ),
    Schema.Unknown
  )
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
