/**
 * Handlers of the verifier API: each calls the domain (Agents, Policies, StatelessChecks) and maps
 * its errors with httpErrors.ts. The caller was authorized before (V2Authorization on every group:
 * http/authorization.ts, the routes' operations in http/operations.ts).
 * Creation and policy bodies are read raw and handed to the domain, which checks them in Keylime's
 * order with its texts (the Schemas in Api.ts describe them for clients and OpenAPI).
 */
import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either, FiberRef, Schema } from "effect"
import { BadRequest, StatusText } from "../../../../schemas/Envelope.js"
import { bulkInSchemaOrder, VerifierAgentList } from "../../../../schemas/Verifier.js"
import { isTransientSqlError, retryOnceWhen } from "../../../db/transient.js"
import { currentApiVersion, versionInfo, type VersionSet } from "../../../http/versions.js"
import { version as attestVersion } from "../../../ops/version.js"
import { VerifierConfig } from "../../../config/services.js"
import type { EarVerdict } from "../../../ear/appraisal.js"
import { bodyRefusedResponse, readBodyBytes } from "../../../http/body.js"
import { envelopeResponse } from "../../../http/envelope.js"
import { RETRY_AFTER_SECONDS } from "../../../http/platform.js"
import { EAR_MEDIA_TYPE, issueEar } from "../../../ear/token.js"
import { Agents } from "../../domain/Agents.js"
import { EarIssuer } from "../../domain/earIssuer.js"
import { VerifierApi } from "../Api.js"
import { httpErrorOf, logStoreFailure, type Operation, type VerifierDomainError } from "./httpErrors.js"
import { Policies } from "../../domain/policy/Policies.js"
import { type StatelessBusy, StatelessChecks, type StatelessWorkerFailed } from "../../stateless/Stateless.js"
import { VerifierText } from "../../domain/texts.js"

const answer = (operation: Operation) => <A, R>(effect: Effect.Effect<A, VerifierDomainError, R>) =>
  Effect.mapError(Effect.tapError(effect, logStoreFailure), httpErrorOf(operation))

/**
 * A read whose database connection failed transiently is tried once more after
 * TRANSIENT_RETRY_DELAY (a pooled connection that died, PostgreSQL restarting), as the registrar's
 * statements are; a second failure is the 503. Writes are not repeated here: a commit whose answer
 * was lost may have happened.
 */
const answerRead = (operation: Operation) => <A, R>(effect: Effect.Effect<A, VerifierDomainError, R>) =>
  answer(operation)(retryOnceWhen((e: VerifierDomainError) => e._tag === "VerifierStoreError" && isTransientSqlError(e.cause))(effect))

/** The body as JSON: an empty body is Keylime's "Expected non zero content length", bad JSON names the parser's complaint. */
export const jsonBody = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<unknown, BadRequest> =>
  request.text.pipe(
    Effect.mapError(() => new BadRequest({ message: StatusText.malformedJson("the body cannot be read") })),
    Effect.flatMap((text) => {
      if (text.trim() === "") return Effect.fail(new BadRequest({ message: VerifierText.emptyBody }))
      const parsed = Either.try({ try: () => JSON.parse(text) as unknown, catch: (e) => e instanceof Error ? e.message : String(e) })
      return Either.isRight(parsed) ? Effect.succeed(parsed.right) : Effect.fail(new BadRequest({ message: StatusText.malformedJson(parsed.left) }))
    })
  )

export const VerifierVersionHttpLive = (versions: VersionSet) =>
  HttpApiBuilder.group(VerifierApi, "version", (handlers) => {
    const info = Effect.succeed(versionInfo(versions))
    return handlers.handle("version", () => info).handle("versions", () => info)
  })

const encodeAgentList = Schema.encodeSync(VerifierAgentList)

export const VerifierAgentsHttpLive = HttpApiBuilder.group(VerifierApi, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* Agents
    return handlers
      // raw: the bulk status is the domain's values in the schema's field order, not encoded (the
      // encode held the event loop 64 ms at 1,200 agents; the dashboard reads it every few seconds);
      // test/verifier/agents.test.ts holds the two to the same bytes; the id list goes through its schema
      .handleRaw("list", ({ urlParams }) =>
        Effect.gen(function*() {
          // Keylime's reading: `bulk` with any value (its tenant sends `bulk=True`) and an empty
          // `verifier` is no filter (its tenant always sends `verifier=`)
          const verifierId = urlParams.verifier === "" ? undefined : urlParams.verifier
          if (urlParams.bulk !== undefined) {
            const bulk = yield* answerRead("agentRead")(agents.bulk(yield* FiberRef.get(currentApiVersion), verifierId))
            return envelopeResponse(200, "Success", bulkInSchemaOrder(bulk))
          }
          return envelopeResponse(200, "Success", encodeAgentList(yield* answerRead("agentRead")(agents.list(verifierId))))
        }))
      .handle("show", ({ path }) =>
        Effect.flatMap(FiberRef.get(currentApiVersion), (apiVersion) => answerRead("agentRead")(agents.show(path.agent_id, apiVersion))))
      // raw: Keylime's texts for an empty or malformed body and its key order ("Exception error:
      // 'tpm_policy'", the wire replay) come before the AgentConfig schema, which agentBody.ts applies
      .handleRaw("add", ({ path, request }) =>
        jsonBody(request).pipe(
          Effect.flatMap((body) => answer("agentAdd")(agents.add(path.agent_id, body))),
          Effect.as({})
        ))
      .handle("remove", ({ path }) =>
        answer("agentDelete")(agents.remove(path.agent_id)).pipe(
          Effect.map((outcome) => outcome === "deleted" ? ("deleted" as const) : ("terminating" as const))
        ))
      .handle("stop", ({ path }) =>
        answer("agentStopOrReactivate")(agents.stop(path.agent_id)).pipe(Effect.as({})))
      .handle("reactivate", ({ path }) =>
        answer("agentStopOrReactivate")(agents.reactivate(path.agent_id)).pipe(Effect.as({})))
  }))

export const VerifierAllowlistsHttpLive = HttpApiBuilder.group(VerifierApi, "allowlists", (handlers) =>
  Effect.gen(function*() {
    const policies = yield* Policies
    const remove = ({ path }: { readonly path: { readonly name: string } }) =>
      answer("runtimeOther")(policies.deleteRuntime(path.name))
    // policy bodies raw: Keylime's texts for empty and malformed bodies and its "Runtime policy is
    // malformatted: …" come from the domain's checks (Policies), not from HttpApi's decoding
    return handlers
      .handle("list", () => answerRead("runtimeOther")(policies.listRuntime()))
      .handle("show", ({ path }) => answerRead("runtimeOther")(policies.getRuntime(path.name)))
      .handleRaw("add", ({ path, request }) =>
        jsonBody(request).pipe(
          Effect.flatMap((body) => answer("runtimeAdd")(policies.addRuntime(path.name, body))),
          Effect.as({})
        ))
      .handleRaw("update", ({ path, request }) =>
        jsonBody(request).pipe(
          Effect.flatMap((body) => answer("runtimeUpdate")(policies.updateRuntime(path.name, body))),
          Effect.as({})
        ))
      .handle("remove", remove)
      .handle("removeSingular", remove)
  }))

export const VerifierMbPoliciesHttpLive = HttpApiBuilder.group(VerifierApi, "mbpolicies", (handlers) =>
  Effect.gen(function*() {
    const policies = yield* Policies
    // policy bodies raw, as the runtime policies' (Keylime's texts)
    return handlers
      .handle("list", () => answerRead("mbOther")(policies.listMb()))
      .handle("show", ({ path }) => answerRead("mbOther")(policies.getMb(path.name)))
      .handleRaw("add", ({ path, request }) =>
        jsonBody(request).pipe(
          Effect.flatMap((body) => answer("mbAdd")(policies.addMb(path.name, body))),
          Effect.as({})
        ))
      .handleRaw("update", ({ path, request }) =>
        jsonBody(request).pipe(
          Effect.flatMap((body) => answer("mbUpdate")(policies.updateMb(path.name, body))),
          Effect.as({})
        ))
      .handle("remove", ({ path }) => answer("mbOther")(policies.deleteMb(path.name)))
  }))

export const VerifierVerifyHttpLive = HttpApiBuilder.group(VerifierApi, "verify", (handlers) =>
  Effect.gen(function*() {
    const checks = yield* StatelessChecks
    const issuer = yield* EarIssuer
    const { verifier_id, verify_evidence_max_body_size } = yield* VerifierConfig
    /** `Accept: application/eat+jwt`: the verdict as a signed EAR (sub: the TPM AK's SHA-256, or "tee"). */
    const earResponse = (verdict: EarVerdict) =>
      issueEar(verdict, issuer.key, { verifierId: verifier_id, build: `attest ${attestVersion}` }).pipe(
        Effect.map((token) => HttpServerResponse.text(token, { contentType: EAR_MEDIA_TYPE })),
        Effect.mapError((e) => new BadRequest({ message: `cannot issue an EAR: ${e.message}` }))
      )
    /** No place for it (or no worker): 503 with Retry-After, before the body is read. */
    const unavailable = (e: StatelessBusy | StatelessWorkerFailed) =>
      Effect.succeed(HttpServerResponse.setHeader(envelopeResponse(503, e.message), "retry-after", String(RETRY_AFTER_SECONDS)))
    return handlers
      .handle("identity", ({ urlParams }) =>
        checks.identity(urlParams).pipe(
          Effect.catchTags({
            IdentityParameterMissing: (e) => Effect.fail(new BadRequest({ message: e.message })),
            AgentNotFound: (e) => Effect.fail(httpErrorOf("identity")(e)),
            VerifierStoreError: (e) => Effect.fail(httpErrorOf("identity")(e)),
            StatelessBusy: unavailable,
            StatelessWorkerFailed: unavailable
          })
        ))
      // the platform leaves this body unread (Server.ts ownBody): it is read here once the request
      // has a place, within verify_evidence_max_body_size, and decoded and judged by a worker
      .handleRaw("evidence", ({ request }) =>
        Effect.gen(function*() {
          const version = yield* FiberRef.get(currentApiVersion)
          const wantsEar = (request.headers["accept"] ?? "").includes(EAR_MEDIA_TYPE)
          return yield* Effect.scoped(Effect.gen(function*() {
            yield* checks.admit
            const body = yield* readBodyBytes(NodeHttpServerRequest.toIncomingMessage(request), verify_evidence_max_body_size)
            const judged = yield* checks.evidence(body, version, wantsEar)
            if (wantsEar && judged.verdict?.ear !== undefined) return yield* earResponse(judged.verdict.ear)
            return HttpServerResponse.uint8Array(judged.body, { status: judged.status, contentType: "application/json" })
          })).pipe(
            Effect.catchTags({
              StatelessBusy: unavailable,
              StatelessWorkerFailed: unavailable,
              BodyRefused: (e) => Effect.succeed(bodyRefusedResponse(e))
            })
          )
        }))
  }))
