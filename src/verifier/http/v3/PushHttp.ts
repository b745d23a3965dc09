/**
 * Handlers of the API 3.0 routes (authorized before: V3Authorization, http/authorization.ts): each reads its document
 * (push/documents.ts), calls the domain and renders JSON:API (push/render.ts). This file alone
 * chooses statuses, api codes and Keylime's detail texts (push-model.md §1.3-1.6, §5).
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, FiberRef, Option, type Schema } from "effect"
import { AttestationCreateDocument, SessionCreateDocument, SessionUpdateDocument } from "../../../../schemas/Push.js"
import { VerifierConfig } from "../../../config/services.js"
import type { Identity } from "../../../http/identity.js"
import { currentRequestPath, type JsonApiError, jsonApiErrorResponse, jsonApiResponse, reasonPhrase } from "../../../http/jsonapi.js"
import type { VerifierStoreError } from "../../domain/errors.js"
import { Attestations, requestedOf } from "../../push/Attestations.js"
import { Caller } from "../authorization.js"
import { type DocumentRefusal, memoizedReader, readDocument, resourceError } from "./documents.js"
import { readEvidenceDocument } from "./evidenceDocument.js"
import type { PushError, SessionRateLimited } from "../../push/errors.js"
import type { AttestationRow } from "../../domain/pushStore/rows.js"
import { attestationResource, evidenceAcceptedDocument, evidenceRequestedDocument, sessionCreatedDocument, sessionOutcomeDocument, versionPrefixOf } from "./pushRender.js"
import { Sessions } from "../../push/Sessions.js"
import { TokenText, tokenRefusalText } from "./auth.js"
import { parseBearer } from "../../../http/identity.js"
import { StatusText } from "../../../../schemas/Envelope.js"
import { VerifierText } from "../../domain/texts.js"
import { isoMicros } from "../../push/time.js"
import { VerifierApi } from "../Api.js"
import { EarIssuer } from "../../domain/earIssuer.js"
import { signPullEar } from "../../pull/pullEar.js"
import { AgentRepo } from "../../domain/repo/AgentRepo.js"
import { version as attestVersion } from "../../../ops/version.js"
import { fromPlainVerdict } from "../../../ear/appraisal.js"
import { EAR_MEDIA_TYPE, issueEar } from "../../../ear/token.js"
import type { Failure } from "../../../../schemas/Evidence.js"

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
    case "AgentStopped":
      return coded(403, "agent_stopped", `Agent '${e.agentId}' was stopped by an administrator: attestations are refused until it is reactivated.`)
    case "TokenRefused":
      // the session of the request's token ended (an administrator's change) or expired meanwhile: the auth layer's shape
      return titled(401, tokenRefusalText(e))
    case "VerifierStoreError":
      return Effect.zipRight(Effect.logError(`push: ${e.message}`), coded(503, "service_unavailable", "The verifier's database is momentarily unavailable; try again.", { "retry-after": "2" }))
  }
}

/** The session of an agent's token, from its identity (undefined for any other caller). */
export const sessionOf = (identity: Identity): string | undefined => identity._tag === "Agent" ? identity.sessionId : undefined

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
 * Phase 1's answer to an authorized agent in session `sessionId`, from the request's parts: the
 * router's handler and the direct route of push/directRoutes.ts both answer with it.
 */
export const createAttestationAnswer = (attestations: Attestations, agentId: string, sessionId: string | undefined, contentType: string | undefined, text: string) =>
  Effect.gen(function*() {
    const doc = readCapabilities(contentType, text)
    if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
    const a = doc.right.data.attributes
    if (a.system_info === undefined && a.evidence_supported.some((e) => e.evidence_type === "ima_log")) {
      return yield* errorsResponse([resourceError("/data/attributes/system_info", "is required when an IMA log is offered")])
    }
    const created = yield* Effect.either(attestations.create(agentId, { evidenceSupported: a.evidence_supported, bootTime: a.system_info?.boot_time ?? "1970-01-01T00:00:00Z" }, sessionId))
    if (Either.isLeft(created)) return yield* pushErrorResponse(created.left)
    const requestPath = yield* FiberRef.get(currentRequestPath)
    const prefix = versionPrefixOf(requestPath)
    const row = created.right
    return jsonApiResponse(201, evidenceRequestedDocument(row, requestedOf(row), prefix, requestPath), { location: `${prefix}/agents/${row.agent_id}/attestations/${row.idx}` })
  })

/** Phase 2's answer to an authorized agent (shared as createAttestationAnswer). */
export const submitEvidenceAnswer = (attestations: Attestations, agentId: string, sessionId: string | undefined, indexText: string, contentType: string | undefined, text: string) =>
  Effect.gen(function*() {
    const index = indexOf(indexText)
    if (index === undefined) return yield* coded(404, "not_found", `No attestation ${indexText} exists for agent '${agentId}'.`)
    const doc = readEvidenceDocument(contentType, text)
    if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
    const done = yield* Effect.either(attestations.submit(agentId, index, doc.right.data.attributes.evidence_collected, sessionId))
    if (Either.isLeft(done)) return yield* pushErrorResponse(done.left)
    const prefix = versionPrefixOf(yield* FiberRef.get(currentRequestPath))
    return jsonApiResponse(202, evidenceAcceptedDocument(done.right.row, done.right.requested, prefix, done.right.secondsToNext, done.right.collected))
  })

const SessionMediaTypes = ["application/vnd.api+json", "application/json"]

/** Largest session document (a proof is about 1 KiB): a larger body is refused (413) before it is parsed. */
export const SESSION_BODY_MAX_BYTES = 65_536

/** A session document that could not be read: too large, or refused by push/documents.ts. */
type SessionBodyRefusal = DocumentRefusal | { readonly _tag: "TooLarge" }

/** Keylime's text for a session's missing agent id; for one that is not an agent id, the v2 routes' text. */
const agentIdText = (r: DocumentRefusal): string | undefined => {
  if (r._tag !== "Invalid") return undefined
  const e = r.errors.find((x) => x.source?.pointer === "/data/attributes/agent_id")
  if (e === undefined) return undefined
  return e.detail.includes("is required") ? "agent_id is required" : VerifierText.badAgentId
}

/** 429 with Retry-After: Keylime's texts for creations per address and tokens per agent, attest's for failed proofs. */
const rateLimited = (e: SessionRateLimited) =>
  titled(429, RATE_TEXT[e.scope], { "retry-after": String(e.retryAfterSeconds) })
const RATE_TEXT: Readonly<Record<SessionRateLimited["scope"], string>> = {
  ip: "Rate limit exceeded. Please try again later.",
  proofs: "Too many failed proofs from this address. Please try again later.",
  agent: "Rate limit exceeded for this agent. Please try again later."
}

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
        // the platform read the body within the server's limit (max_upload_size, sized for policies):
        // a session document larger than any real one is refused before it is parsed
        const text = yield* Effect.orElseSucceed(request.text, () => "")
        if (text.length > SESSION_BODY_MAX_BYTES || Buffer.byteLength(text, "utf8") > SESSION_BODY_MAX_BYTES) {
          return Either.left<SessionBodyRefusal>({ _tag: "TooLarge" })
        }
        const media = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
        return Either.mapLeft(readDocument(schema, "session", SessionMediaTypes.includes(media) ? "application/vnd.api+json" : media, text), (r): SessionBodyRefusal => r)
      })
    /** The 4xx of a session document that could not be read. */
    const sessionBodyRefusal = (r: SessionBodyRefusal) => {
      if (r._tag === "TooLarge") return titled(413, StatusText.tooLarge(SESSION_BODY_MAX_BYTES))
      const idText = agentIdText(r)
      return idText !== undefined ? titled(400, idText) : refusalResponse(r)
    }
    const clientAddress = (request: HttpServerRequest.HttpServerRequest) => Option.getOrElse(request.remoteAddress, () => "unknown")

    return handlers
      .handle("root", () => Effect.succeed(HttpServerResponse.empty({ status: 200 })))
      // raw bodies: Keylime's session texts (`agent_id is required`, 413 past SESSION_BODY_MAX_BYTES,
      // plain JSON accepted) and JSON:API errors with pointers do not come out of HttpApi's decoding
      .handleRaw("createSession", () =>
        Effect.gen(function*() {
          const doc = yield* sessionBody(SessionCreateDocument)
          if (Either.isLeft(doc)) return yield* sessionBodyRefusal(doc.left)
          const request = yield* HttpServerRequest.HttpServerRequest
          const a = doc.right.data.attributes
          const created = yield* Effect.either(sessions.create({ agentId: a.agent_id, methods: a.authentication_supported, clientAddress: clientAddress(request) }))
          if (Either.isRight(created)) return jsonApiResponse(200, sessionCreatedDocument(created.right))
          const e = created.left
          switch (e._tag) {
            case "SessionRequestInvalid":
              return yield* titled(400, e.detail)
            case "SessionRateLimited":
              return yield* rateLimited(e)
          }
        }))
      .handleRaw("updateSession", ({ path }) =>
        Effect.gen(function*() {
          const doc = yield* sessionBody(SessionUpdateDocument)
          if (Either.isLeft(doc)) return yield* sessionBodyRefusal(doc.left)
          const request = yield* HttpServerRequest.HttpServerRequest
          const header = request.headers["authorization"]
          const bearer = header === undefined ? undefined : Option.getOrUndefined(parseBearer(header))
          if (header !== undefined && bearer === undefined) return yield* titled(401, TokenText.format)
          const a = doc.right.data.attributes
          const proof = a.authentication_provided?.find((p) => p.authentication_type === "tpm_pop")?.data
          const outcome = yield* Effect.either(sessions.prove({ sessionId: path.session_id, agentId: a.agent_id, proof, bearer, clientAddress: clientAddress(request) }))
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
              return yield* titled(401, tokenRefusalText(e))
            case "SessionRateLimited":
              return yield* rateLimited(e)
            case "VerifierStoreError":
              return yield* pushErrorResponse(e)
          }
        }))
      // the agent's token was checked by V3Authorization (http/authorization.ts): its session is the
      // caller's. Raw bodies: the front app (directRoutes.ts) answers from the same readers, whose
      // 415/400/422 JSON:API errors with pointers do not come out of HttpApi's decoding
      .handleRaw("createAttestation", ({ path }) =>
        Effect.flatMap(Effect.zip(Caller, requestBody), ([caller, b]) => createAttestationAnswer(attestations, path.agent_id, sessionOf(caller), b.contentType, b.text)))
      .handleRaw("submitEvidence", ({ path }) =>
        Effect.flatMap(Effect.zip(Caller, requestBody), ([caller, b]) => submitEvidenceAnswer(attestations, path.agent_id, sessionOf(caller), path.index, b.contentType, b.text)))
      .handle("listAttestations", ({ path }) =>
        Effect.gen(function*() {
          const rows = yield* Effect.either(attestations.list(path.agent_id))
          if (Either.isLeft(rows)) return yield* pushErrorResponse(rows.left)
          const requestPath = yield* FiberRef.get(currentRequestPath)
          const prefix = versionPrefixOf(requestPath)
          return jsonApiResponse(200, { data: rows.right.map((r) => attestationResource(r, requestedOf(r), prefix)), links: { self: requestPath }, jsonapi: { version: "1.1" } })
        }))
      .handle("showAttestation", ({ path, request }) =>
        Effect.gen(function*() {
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
        }))
  }))
