/**
 * Handlers of the API 3.0 administration routes (push/AdminApi.ts), the caller authorized before
 * (V3Authorization, http/authorization.ts: 401/403 with spec §7.3's texts): the request document (push/documents.ts),
 * then the v2 domain (Agents, Policies) or AgentAdmin for what v2 has no route for (the full
 * record, PATCH). Domain errors become JSON:API errors in adminErrors.ts; statuses of success are
 * chosen here: 201 with Location for a creation, 200 with the resource for a read or PATCH, 204
 * for delete, stop and reactivate (202 when another process deletes a polled agent).
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, FiberRef, type Schema } from "effect"
import { StatusText } from "../../../../schemas/Envelope.js"
import { ReadCreateDocument, ReadUpdateDocument, V3Type } from "../../../../schemas/V3Admin.js"
import { VerifierConfig } from "../../../config/services.js"
import { envelopeResponse } from "../../../http/envelope.js"
import { currentRequestPath, jsonApiResponse } from "../../../http/jsonapi.js"
import { AgentAdmin } from "../../domain/AgentAdmin.js"
import { Agents } from "../../domain/Agents.js"
import { VerifierApi } from "../Api.js"
import type { RuntimePolicyResponse } from "../../../../schemas/Verifier.js"
import { logStoreFailure, type VerifierDomainError } from "../v2/httpErrors.js"
import { Policies } from "../../domain/policy/Policies.js"
import type { RenderSettings } from "../../domain/agentStatus.js"
import { type AdminOperation, adminErrorOf } from "./adminErrors.js"
import { agentPath, agentResource, documentOf, imaPolicyPath, imaPolicyResource, nameResource, uefiRefstatePath, uefiRefstateResource } from "./adminRender.js"
import { readDocument } from "./documents.js"
import { errorsResponse, refusalResponse } from "./PushHttp.js"
import { versionPrefixOf } from "./pushRender.js"

type Response = HttpServerResponse.HttpServerResponse

const readBody = <A, I>(schema: Schema.Schema<A, I, never>, type: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* Effect.orElseSucceed(request.text, () => "")
    return readDocument(schema, type, request.headers["content-type"], text)
  })

/** The domain's answer, or its error as a JSON:API error document. */
const answer = <A, R>(operation: AdminOperation, effect: Effect.Effect<A, VerifierDomainError, R>, ok: (a: A) => Effect.Effect<Response, never, R>) =>
  Effect.flatMap(
    Effect.either(Effect.tapError(effect, logStoreFailure)),
    (result) => Either.isLeft(result) ? errorsResponse([adminErrorOf(operation, result.left)]) : ok(result.right)
  )

const prefixAndPath = Effect.map(FiberRef.get(currentRequestPath), (path) => ({ prefix: versionPrefixOf(path), path }))

/** PATCH's `data.id`, when given, must be the resource the path names (JSON:API: 409). */
const idMismatch = (given: string | undefined, expected: string) =>
  given !== undefined && given !== expected
    ? errorsResponse([{ status: "409", code: "conflict", detail: `'data.id' is '${given}' but the request is for '${expected}'.`, source: { pointer: "/data/id" } }])
    : undefined

const noContent = Effect.succeed(HttpServerResponse.empty({ status: 204 }))

export const V3AdminHttpLive = HttpApiBuilder.group(VerifierApi, "v3admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* AgentAdmin
    const agents = yield* Agents
    const policies = yield* Policies
    const config = yield* VerifierConfig
    const settings: RenderSettings = { verifierIp: config.ip, verifierPort: config.port, quoteInterval: config.quote_interval }

    const agentDocument = (agentId: string, status: number, withLocation = false) =>
      answer("agent", admin.record(agentId), (r) =>
        Effect.map(prefixAndPath, ({ prefix, path }) => {
          const resource = agentResource(r, settings, prefix)
          return jsonApiResponse(status, documentOf(resource, withLocation ? resource.links.self : path), withLocation ? { location: resource.links.self } : {})
        }))

    /** The policy `read` gives (stored now: without its text, or read back), as a document. */
    const imaDocument = (read: Effect.Effect<RuntimePolicyResponse, VerifierDomainError>, status: number, stored: "created" | "updated" | "read") =>
      answer("imaPolicy", read, (p) =>
        Effect.map(prefixAndPath, ({ prefix, path }) => {
          const self = imaPolicyPath(prefix, p.name)
          const resource = imaPolicyResource(p, prefix, stored === "read")
          return stored === "created"
            ? jsonApiResponse(status, documentOf(resource, self), { location: self })
            : jsonApiResponse(status, documentOf(resource, path))
        }))

    const uefiDocument = (name: string, status: number, withLocation = false) =>
      answer("uefiRefstate", policies.getMb(name), (p) =>
        Effect.map(prefixAndPath, ({ prefix, path }) => {
          const self = uefiRefstatePath(prefix, p.name)
          return jsonApiResponse(status, documentOf(uefiRefstateResource(p, prefix), withLocation ? self : path), withLocation ? { location: self } : {})
        }))

    // creations and PATCHes read their document raw (push/documents.ts): its 415, 400 and 422 JSON:API
    // errors with pointers (Keylime's shapes) do not come out of HttpApi's payload decoding
    return handlers
      // --- agents ---
      .handle("listAgents", () =>
        answer("agent", admin.records(), (records) =>
          Effect.map(prefixAndPath, ({ prefix, path }) => jsonApiResponse(200, documentOf(records.map((r) => agentResource(r, settings, prefix)), path)))))
      .handleRaw("createAgent", () =>
        Effect.gen(function*() {
          const doc = yield* readBody(ReadCreateDocument(V3Type.agent), V3Type.agent)
          if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
          const { id, attributes } = doc.right.data
          return yield* answer("agentCreate", agents.add(id, attributes), () => agentDocument(id, 201, true))
        }))
      .handle("showAgent", ({ path }) => agentDocument(path.agent_id, 200))
      .handleRaw("updateAgent", ({ path }) =>
        Effect.gen(function*() {
          const doc = yield* readBody(ReadUpdateDocument(V3Type.agent), V3Type.agent)
          if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
          const mismatch = idMismatch(doc.right.data.id, path.agent_id)
          if (mismatch !== undefined) return yield* mismatch
          return yield* answer("agent", admin.update(path.agent_id, doc.right.data.attributes), (r) =>
            Effect.map(prefixAndPath, ({ prefix, path: self }) => jsonApiResponse(200, documentOf(agentResource(r, settings, prefix), self))))
        }))
      .handle("deleteAgent", ({ path }) =>
        answer("agent", agents.remove(path.agent_id), (outcome) =>
          outcome === "deleted"
            ? noContent
            : Effect.map(prefixAndPath, ({ prefix }) =>
              jsonApiResponse(202, {
                meta: { detail: `Agent '${path.agent_id}' is marked for deletion; the verifier process polling it deletes it.` },
                links: { self: agentPath(prefix, path.agent_id) },
                jsonapi: { version: "1.1" }
              }))))
      .handle("stopAgent", ({ path }) => answer("agent", agents.stop(path.agent_id), () => noContent))
      .handle("reactivateAgent", ({ path }) =>
        answer("agent", agents.reactivate(path.agent_id), () => noContent))
      // --- IMA policies ---
      .handle("listImaPolicies", () =>
        answer("imaPolicy", policies.listRuntime(), (names) =>
          Effect.map(prefixAndPath, ({ prefix, path }) =>
            jsonApiResponse(200, documentOf(names["runtimepolicy names"].map((n) => nameResource(V3Type.imaPolicy, n, imaPolicyPath(prefix, n))), path)))))
      .handleRaw("createImaPolicy", () =>
        Effect.gen(function*() {
          const doc = yield* readBody(ReadCreateDocument(V3Type.imaPolicy), V3Type.imaPolicy)
          if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
          const { id, attributes } = doc.right.data
          return yield* imaDocument(policies.addRuntime(id, attributes), 201, "created")
        }))
      .handle("showImaPolicy", ({ path }) => imaDocument(policies.getRuntime(path.name), 200, "read"))
      .handleRaw("updateImaPolicy", ({ path }) =>
        Effect.gen(function*() {
          const doc = yield* readBody(ReadUpdateDocument(V3Type.imaPolicy), V3Type.imaPolicy)
          if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
          const mismatch = idMismatch(doc.right.data.id, path.name)
          if (mismatch !== undefined) return yield* mismatch
          return yield* imaDocument(policies.updateRuntime(path.name, doc.right.data.attributes), 200, "updated")
        }))
      .handle("deleteImaPolicy", ({ path }) =>
        answer("imaPolicy", policies.deleteRuntime(path.name), () => noContent))
      // --- UEFI reference states ---
      .handle("listUefiRefstates", () =>
        answer("uefiRefstate", policies.listMb(), (names) =>
          Effect.map(prefixAndPath, ({ prefix, path }) =>
            jsonApiResponse(200, documentOf(names["mbpolicy names"].map((n) => nameResource(V3Type.uefiRefstate, n, uefiRefstatePath(prefix, n))), path)))))
      .handleRaw("createUefiRefstate", () =>
        Effect.gen(function*() {
          const doc = yield* readBody(ReadCreateDocument(V3Type.uefiRefstate), V3Type.uefiRefstate)
          if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
          const { id, attributes } = doc.right.data
          return yield* answer("uefiRefstate", policies.addMb(id, attributes), () => uefiDocument(id, 201, true))
        }))
      .handle("showUefiRefstate", ({ path }) => uefiDocument(path.name, 200))
      .handleRaw("updateUefiRefstate", ({ path }) =>
        Effect.gen(function*() {
          const doc = yield* readBody(ReadUpdateDocument(V3Type.uefiRefstate), V3Type.uefiRefstate)
          if (Either.isLeft(doc)) return yield* refusalResponse(doc.left)
          const mismatch = idMismatch(doc.right.data.id, path.name)
          if (mismatch !== undefined) return yield* mismatch
          return yield* answer("uefiRefstate", policies.updateMb(path.name, doc.right.data.attributes), () => uefiDocument(path.name, 200))
        }))
      .handle("deleteUefiRefstate", ({ path }) =>
        answer("uefiRefstate", policies.deleteMb(path.name), () => noContent))
  }))

/** `GET /` → 307 to `/v3.0/` with an empty text/html body, as Keylime (Tornado's redirect) answers (ver-root). Public. */
export const ServerRootHttpLive = HttpApiBuilder.group(VerifierApi, "root", (handlers) =>
  handlers.handle("root", () =>
    Effect.map(FiberRef.get(currentRequestPath), (path) =>
      // `/v2.6/` reaches this route once the platform strips its prefix: no API root there
      path === "/"
        ? HttpServerResponse.text("", { status: 307, contentType: "text/html; charset=UTF-8", headers: { location: "/v3.0/" } })
        : envelopeResponse(404, StatusText.notFound("GET", path)))))
