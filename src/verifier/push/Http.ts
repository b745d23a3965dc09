/**
 * Handlers of the API 3.0 routes: each authorizes (push/auth.ts), reads its document
 * (push/documents.ts), calls the domain and renders JSON:API (push/render.ts). This file alone
 * chooses statuses, api codes and Keylime's detail texts (push-model.md §1.3-1.6, §5).
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, FiberRef, Option, type Schema } from "effect"
import { AttestationCreateDocument, AttestationEvidenceDocument, SessionCreateDocument, SessionUpdateDocument } from "../../../schemas/Push.js"
import { VerifierConfig } from "../../config/services.js"
import type { OperationClass } from "../../http/authorization.js"
import { currentRequestPath, type JsonApiError, jsonApiErrorResponse, jsonApiResponse, reasonPhrase } from "../../http/jsonapi.js"
import type { VerifierStoreError } from "../errors.js"
import { Attestations, requestedOf } from "./Attestations.js"
import { authorizeV3 } from "./auth.js"
import { type DocumentRefusal, memoizedReader, readDocument, resourceError } from "./documents.js"
import type { PushError } from "./errors.js"
import type { AttestationRow } from "./rows.js"
import { attestationResource, evidenceAcceptedDocument, evidenceRequestedDocument, sessionCreatedDocument, sessionOutcomeDocument, versionPrefixOf } from "./render.js"
import { Sessions } from "./Sessions.js"
import { TokenText } from "./auth.js"
import { isoMicros } from "./time.js"
import { VerifierApi } from "../Api.js"
import { EarIssuer } from "../earIssuer.js"
import { signPullEar } from "../pullEar.js"
import { AgentRepo } from "../repo/AgentRepo.js"
import { version as attestVersion } from "../../cli/version.js"
import { fromPlainVerdict } from "../../ear/appraisal.js"
import { EAR_MEDIA_TYPE, issueEar } from "../../ear/token.js"
import type { Failure } from "../../../schemas/Evidence.js"

export const titled = (status: number, detail: string, headers: Record<string, string> = {}) =>
  Effect.map(FiberRef.get(currentRequestPath), (path) => jsonApiErrorResponse([{ status: String(status), title: reasonPhrase(status), detail }], path, headers))

const coded = (status: number, code: string, detail: string, headers: Record<string, string> = {}) =>
  Effect.map(FiberRef.get(currentRequestPath), (path) => jsonApiErrorResponse([{ status: String(status), code, detail }], path, headers))

export const errorsResponse = (errors: ReadonlyArray<JsonApiError>) => Effect.map(FiberRef.get(currentRequestPath), (path) => jsonApiErrorResponse(errors, path))

export const refusalResponse = (r: DocumentRefusal) =>
  r._tag === "UnsupportedMediaType"
    ? titled(415, `Unsupported Media Type: the body must be application/vnd.api+json (received ${r.received === "" ? "none" : r.received})`)
    : errorsResponse(r.errors)

/** Domain errors of attestations → Keylime's status, code and detail. */
const pushErrorResponse = (e: PushError | VerifierStoreError) => {
  switch (e._tag) {
    case "PushAgentNotFound":
      return coded(404, "not_found", `No enrolled agent with ID '${e.agentId}'.`)
    case "AttestationNotFound":
      return coded(404, "not_found", e.index === undefined ? `No attestation exists for agent '${e.agentId}'.` : `No attestation ${e.index} exists for agent '${e.agentId}'.`)
    case "PrematureAttestation":
      return coded(429, "premature_attestation", `Cannot create attestation for agent '${e.agentId}' before the configured interval has elapsed. Wait ${e.waitSeconds} seconds before trying again.`, {
        "retry-after": String(e.waitSeconds)
      })
    case "VerificationInProgress":
      return coded(
        503,
        "verification_in_progress",
        `Cannot create attestation for agent '${e.agentId}' while the last attestation is still being verified. The active verification task is expected to complete or time out within ${e.waitSeconds} seconds.`,
        { "retry-after": String(e.waitSeconds) }
      )
    case "CreationConflict":
      return coded(409, "conflict", `Cannot create attestation for agent '${e.agentId}' while another creation attempt is in progress.`)
    case "OldAttestation":
      return coded(403, "old_attestation", `Attestation ${e.index} is not the latest for agent '${e.agentId}'. Only evidence for the most recent attestation may be updated.`)
    case "EvidenceImmutable":
      return coded(403, "evidence_immutable", `Cannot alter evidence for attestation ${e.index} which has already been received and accepted.`)
    case "ChallengesExpired":
      return coded(403, "challenges_expired", `Challenges for attestation ${e.index} expired at ${isoMicros(e.expiredAt)}. Create a new attestation and try again.`)
    case "InvalidResourceData":
      return errorsResponse([resourceError(e.pointer, e.reason)])
    case "VerifierStoreError":
      return Effect.zipRight(Effect.logError(`push: ${e.message}`), coded(503, "service_unavailable", "The verifier's database is momentarily unavailable; try again.", { "retry-after": "2" }))
  }
}

/** Authorization first: 401/403 in the auth layer's shape (title, no code). */
export const guarded = <R>(action: string, operationClass: OperationClass, agentId: string | undefined, body: Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>) =>
  Effect.flatMap(authorizeV3(action, operationClass, agentId), (decided) => Either.isLeft(decided) ? titled(decided.left.status, decided.left.detail) : body)

/** The request's body text and content type (the platform read it within its limits). */
const requestBody = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const text = yield* Effect.orElseSucceed(request.text, () => "")
  return { contentType: request.headers["content-type"], text }
})

/** `latest` or a non-negative integer; anything else names no attestation. */
const indexOf = (text: string): number | "latest" | undefined =>
  text === "latest" ? "latest" : /^\d{1,9}$/.test(text) ? Number(text) : undefined

/** Phase 1's document: an agent sends the same capabilities every cycle (one decoded copy per agent, for 1,024 agents). */
const readCapabilities = memoizedReader(AttestationCreateDocument, "attestation", 1024)

/**
 * Phase 1's answer to an authorized agent, from the request's parts: the router's handler and the
 * direct route of push/directRoutes.ts both answer with it.
 */
export const createAttestationAnswer = (attestations: Attestations, agentId: string, contentType: string | undefined, text: string) =>
  Effect.gen(function*() {
    const doc = readCapabilities(contentType, text)
    if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
    const a = doc.right.data.attributes
    if (a.system_info === undefined && a.evidence_supported.some((e) => e.evidence_type === "ima_log")) {
      return yield* errorsResponse([resourceError("/data/attributes/system_info", "is required when an IMA log is offered")])
    }
    const created = yield* Effect.either(attestations.create(agentId, { evidenceSupported: a.evidence_supported, bootTime: a.system_info?.boot_time ?? "1970-01-01T00:00:00Z" }))
    if (Either.isLeft(created)) return yield* pushErrorResponse(created.left)
    const requestPath = yield* FiberRef.get(currentRequestPath)
    const prefix = versionPrefixOf(requestPath)
    const row = created.right
    return jsonApiResponse(201, evidenceRequestedDocument(row, requestedOf(row), prefix, requestPath), { location: `${prefix}/agents/${row.agent_id}/attestations/${row.idx}` })
  })

/** Phase 2's answer to an authorized agent (shared as createAttestationAnswer). */
export const submitEvidenceAnswer = (attestations: Attestations, agentId: string, indexText: string, contentType: string | undefined, text: string) =>
  Effect.gen(function*() {
    const index = indexOf(indexText)
    if (index === undefined) return yield* coded(404, "not_found", `No attestation ${indexText} exists for agent '${agentId}'.`)
    const doc = readDocument(AttestationEvidenceDocument, "attestation", contentType, text)
    if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
    const done = yield* Effect.either(attestations.submit(agentId, index, doc.right.data.attributes.evidence_collected))
    if (Either.isLeft(done)) return yield* pushErrorResponse(done.left)
    const prefix = versionPrefixOf(yield* FiberRef.get(currentRequestPath))
    return jsonApiResponse(202, evidenceAcceptedDocument(done.right.row, done.right.requested, prefix, done.right.secondsToNext, done.right.collected))
  })

const SessionMediaTypes = ["application/vnd.api+json", "application/json"]

export const PushHttpLive = HttpApiBuilder.group(VerifierApi, "push", (handlers) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const attestations = yield* Attestations
    const config = yield* VerifierConfig
    const issuer = yield* EarIssuer
    const agents = yield* AgentRepo
    /** `Accept: application/eat+jwt`: the attestation's verdict as a signed EAR, once there is one. */
    const earOf = (row: AttestationRow) =>
      row.stage !== "verification_complete"
        ? coded(409, "verification_pending", `Attestation ${row.idx} of agent '${row.agent_id}' has no verdict yet (${row.stage}).`)
        : issueEar(
          fromPlainVerdict({
            agentId: row.agent_id,
            valid: row.evaluation === "pass",
            failures: row.failures === null ? [] : (JSON.parse(row.failures) as ReadonlyArray<Failure>),
            claims: { type: "tpm" }
          }),
          issuer.key,
          { verifierId: config.verifier_id, build: `attest ${attestVersion}` }
        ).pipe(
          Effect.map((token) => HttpServerResponse.text(token, { contentType: EAR_MEDIA_TYPE })),
          Effect.catchAll((e) => coded(500, "ear_failed", `cannot issue an EAR: ${e.message}`))
        )

    /** A pull agent's latest verdict as an EAR; undefined when it has none (never judged, or a push agent). */
    const pullEarOf = (agentId: string) =>
      Effect.gen(function*() {
        const stored = yield* Effect.either(agents.lastVerdict(agentId))
        if (Either.isLeft(stored)) return yield* pushErrorResponse(stored.left)
        if (Option.isNone(stored.right) || stored.right.value === null) return undefined
        const token = signPullEar(agentId, stored.right.value, issuer.key, { verifierId: config.verifier_id, build: `attest ${attestVersion}` })
        return Either.isRight(token)
          ? HttpServerResponse.text(token.right, { contentType: EAR_MEDIA_TYPE })
          : yield* coded(500, "ear_failed", `cannot issue an EAR: ${token.left}`)
      })

    // sessions: Keylime's SessionController writes raw `{status, title, detail}` errors and accepts plain JSON too
    const sessionBody = <A, I>(schema: Schema.Schema<A, I, never>) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const text = yield* Effect.orElseSucceed(request.text, () => "")
        const media = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
        return readDocument(schema, "session", SessionMediaTypes.includes(media) ? "application/vnd.api+json" : media, text)
      })

    return handlers
      .handleRaw("root", () => Effect.succeed(HttpServerResponse.empty({ status: 200 })))
      .handleRaw("createSession", () =>
        Effect.gen(function*() {
          const doc = yield* sessionBody(SessionCreateDocument)
          if (Either.isLeft(doc)) {
            // Keylime's texts for the two fields it checks
            const missingId = doc.left._tag === "Invalid" && doc.left.errors.some((e) => e.source?.pointer === "/data/attributes/agent_id")
            return missingId ? yield* titled(400, "agent_id is required") : yield* refusalResponse(doc.left)
          }
          const request = yield* HttpServerRequest.HttpServerRequest
          const a = doc.right.data.attributes
          const created = yield* Effect.either(sessions.create({ agentId: a.agent_id, methods: a.authentication_supported, clientAddress: Option.getOrElse(request.remoteAddress, () => "unknown") }))
          if (Either.isRight(created)) return jsonApiResponse(200, sessionCreatedDocument(created.right))
          const e = created.left
          switch (e._tag) {
            case "SessionRequestInvalid":
              return yield* titled(400, e.detail)
            case "SessionRateLimited":
              return yield* titled(429, e.scope === "ip" ? "Rate limit exceeded. Please try again later." : "Rate limit exceeded for this agent. Please try again later.", {
                "retry-after": String(e.retryAfterSeconds)
              })
            case "VerifierStoreError":
              return yield* pushErrorResponse(e)
          }
        }))
      .handleRaw("updateSession", ({ path }) =>
        Effect.gen(function*() {
          const doc = yield* sessionBody(SessionUpdateDocument)
          if (Either.isLeft(doc)) {
            const missingId = doc.left._tag === "Invalid" && doc.left.errors.some((e) => e.source?.pointer === "/data/attributes/agent_id")
            return missingId ? yield* titled(400, "agent_id is required") : yield* refusalResponse(doc.left)
          }
          const request = yield* HttpServerRequest.HttpServerRequest
          const header = request.headers["authorization"]
          const bearer = header === undefined ? undefined : /^Bearer (.+)$/.exec(header.trim())?.[1]
          if (header !== undefined && bearer === undefined) return yield* titled(401, TokenText.format)
          const a = doc.right.data.attributes
          const proof = a.authentication_provided?.find((p) => p.authentication_type === "tpm_pop")?.data
          const outcome = yield* Effect.either(sessions.prove({ sessionId: path.session_id, agentId: a.agent_id, proof, bearer }))
          if (Either.isRight(outcome)) {
            const o = outcome.right
            return jsonApiResponse(o._tag === "Fail" && o.why === "bad_proof" ? 401 : 200, sessionOutcomeDocument(o))
          }
          const e = outcome.left
          switch (e._tag) {
            case "SessionNotFound":
              return yield* titled(404, "Session not found")
            case "SessionRequestInvalid":
              return yield* titled(400, e.detail)
            case "TokenRefused":
              return yield* titled(401, TokenText[e.reason])
            case "VerifierStoreError":
              return yield* pushErrorResponse(e)
          }
        }))
      .handleRaw("createAttestation", ({ path }) =>
        guarded("submit_attestation", "agent", path.agent_id, Effect.flatMap(requestBody, (b) => createAttestationAnswer(attestations, path.agent_id, b.contentType, b.text))))
      .handleRaw("submitEvidence", ({ path }) =>
        guarded("submit_attestation", "agent", path.agent_id, Effect.flatMap(requestBody, (b) => submitEvidenceAnswer(attestations, path.agent_id, path.index, b.contentType, b.text))))
      .handleRaw("listAttestations", ({ path }) =>
        guarded("list_attestations", "admin", path.agent_id, Effect.gen(function*() {
          const rows = yield* Effect.either(attestations.list(path.agent_id))
          if (Either.isLeft(rows)) return yield* pushErrorResponse(rows.left)
          const requestPath = yield* FiberRef.get(currentRequestPath)
          const prefix = versionPrefixOf(requestPath)
          return jsonApiResponse(200, { data: rows.right.map((r) => attestationResource(r, requestedOf(r), prefix)), links: { self: requestPath }, jsonapi: { version: "1.1" } })
        })))
      .handleRaw("showAttestation", ({ path, request }) =>
        guarded("read_attestation", "admin", path.agent_id, Effect.gen(function*() {
          const index = indexOf(path.index)
          if (index === undefined) return yield* coded(404, "not_found", `No attestation ${path.index} exists for agent '${path.agent_id}'.`)
          const wantsEar = (request.headers["accept"] ?? "").includes(EAR_MEDIA_TYPE)
          const row = yield* Effect.either(attestations.show(path.agent_id, index))
          if (Either.isLeft(row)) {
            // a pull agent has no push attestations: its latest EAR is signed from its last verdict
            if (wantsEar && index === "latest" && row.left._tag === "AttestationNotFound") {
              const pulled = yield* pullEarOf(path.agent_id)
              if (pulled !== undefined) return pulled
            }
            return yield* pushErrorResponse(row.left)
          }
          if (wantsEar) return yield* earOf(row.right)
          const requestPath = yield* FiberRef.get(currentRequestPath)
          return jsonApiResponse(200, { data: attestationResource(row.right, requestedOf(row.right), versionPrefixOf(requestPath)), links: { self: requestPath }, jsonapi: { version: "1.1" } })
        })))
  }))
