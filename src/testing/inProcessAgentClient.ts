/**
 * The verifier's `AgentClient` without sockets: each request goes to the simulated agent's own
 * request app (src/agent/Http.ts: the query parsed, the quote made by Quotes.ts, the answer encoded
 * in its envelope), and its answer is judged by the verifier's own reader of the quote endpoint
 * (quoteRequest.ts `quoteAnswer`), so the evidence and its checks are those of a real exchange.
 * An agent whose network the script cut answers nothing: the request fails as a real one does,
 * after `request_timeout`, classified as a timeout.
 */
import { HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Either, Layer } from "effect"
import { VerifierConfig } from "../config/services.js"
import { recordAgentRequestError } from "../ops/metrics.js"
import { AgentClient, type AgentClientShape, AgentRequestFailed, type AgentTarget, networkProblem, quoteAnswer, quotePath, type RequestProblem } from "../verifier/index.js"
import type { SimulatedAgent } from "./simulatedAgent.js"

/** The text of a response the agent's app made (its bodies are bytes or text). */
const bodyText = (response: HttpServerResponse.HttpServerResponse): string => {
  const body = response.body
  if (body._tag === "Uint8Array") return new TextDecoder().decode(body.body)
  if (body._tag === "Raw" && typeof body.body === "string") return body.body
  return ""
}

/** What undici reports when no answer comes within request_timeout. */
const noAnswer = (): RequestProblem => networkProblem(Object.assign(new Error("Headers Timeout Error"), { code: "UND_ERR_HEADERS_TIMEOUT" }))

export const makeInProcessAgentClient = (agents: ReadonlyMap<string, SimulatedAgent>, requestTimeoutSeconds: number): AgentClientShape => {
  const failed = (t: AgentTarget, operation: AgentRequestFailed["operation"], p: RequestProblem) =>
    Effect.zipRight(
      recordAgentRequestError(p.kind),
      Effect.fail(new AgentRequestFailed({ agentId: t.agentId, operation, kind: p.kind, status: p.status, reason: p.reason }))
    )

  /** One request to the agent's app: its status and body text, or the problem a real request would meet. */
  const exchange = (t: AgentTarget, method: "GET" | "POST", path: string, body?: unknown) =>
    Effect.suspend((): Effect.Effect<{ readonly status: number; readonly text: string }, RequestProblem> => {
      const agent = agents.get(t.agentId)
      if (agent === undefined || agent.app === undefined) {
        return Effect.fail(networkProblem(Object.assign(new Error(`connect ECONNREFUSED ${t.ip}:${t.port}`), { code: "ECONNREFUSED" })))
      }
      if (agent.network.down) return Effect.zipRight(Effect.sleep(Duration.seconds(requestTimeoutSeconds)), Effect.fail(noAnswer()))
      const request = HttpServerRequest.fromWeb(
        new Request(`http://${t.ip}:${t.port}${path}`, {
          method,
          ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
        })
      )
      return Effect.map(
        Effect.provideService(agent.app, HttpServerRequest.HttpServerRequest, request),
        (response) => ({ status: response.status, text: bodyText(response) })
      ) as Effect.Effect<{ readonly status: number; readonly text: string }, never>
    })

  /** A request whose success is any 200 (V, revocation notices). */
  const post = (t: AgentTarget, operation: "vkey" | "revocation", path: string, body: unknown) =>
    exchange(t, "POST", `/v${t.apiVersion}${path}`, body).pipe(
      Effect.flatMap((r) => r.status === 200 ? Effect.void : Effect.fail<RequestProblem>({ kind: "http_status", status: r.status, reason: `status ${r.status}` })),
      Effect.catchAll((p) => failed(t, operation, p))
    )

  return {
    integrityQuote: (t, r) =>
      exchange(t, "GET", quotePath(`/v${t.apiVersion}`, r)).pipe(
        Effect.flatMap(({ status, text }) => Either.match(quoteAnswer(status, text), { onLeft: Effect.fail, onRight: Effect.succeed })),
        Effect.catchAll((p) => failed(t, "quote", p))
      ),
    deliverV: (t, encryptedKey) => post(t, "vkey", "/keys/vkey", { encrypted_key: encryptedKey }),
    revocation: (t, body) => post(t, "revocation", "/notifications/revocation", { msg: body.msg, signature: body.signature }),
    release: () => Effect.void
  }
}

/** AgentClient over the fleet's simulated pull agents, with the verifier's `request_timeout`. */
export const inProcessAgentClient = (agents: ReadonlyMap<string, SimulatedAgent>): Layer.Layer<AgentClient, never, VerifierConfig> =>
  Layer.effect(AgentClient, Effect.map(VerifierConfig, (config) => makeInProcessAgentClient(agents, config.request_timeout)))
