/**
 * The pull agent's API as an HttpApi definition, for clients: the verifier and the tenant decode
 * the agent's answers with
 *
 *   const agent = yield* HttpApiClient.make(AgentApi, { baseUrl: `https://${ip}:${port}/v${version}` })
 *   const quote = yield* agent.quotes.integrity({ urlParams: { nonce, mask: "0x400", partial: "1", ima_ml_entry: 42 } })
 *   const { supported_version } = yield* (yield* HttpApiClient.make(AgentVersionApi, { baseUrl: `https://${ip}:${port}` })).version.get()
 *
 * (an HttpClient with the verifier's client certificate, trusting the agent's mtls_cert, in
 * context). Every answer is the envelope; the agent's refusals decode into BadRequest / NotFound /
 * InternalError carrying the agent's status text. The agent itself serves these schemas from its
 * own dispatcher (Http.ts), which also gives rust-keylime's routing answers this API leaves out.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import {
  AgentInfo,
  AgentVersion,
  IdentityQuote,
  IdentityQuoteQuery,
  IntegrityQuote,
  IntegrityQuoteQuery,
  PubkeyResult,
  RevocationNotice,
  UKeyRequest,
  VerifyQuery,
  VerifyResult,
  VKeyRequest
} from "../../schemas/Agent.js"
import { BadRequestE, Empty, Envelope, InternalErrorE, NotFoundE } from "../../schemas/Envelope.js"

export class AgentQuotes extends HttpApiGroup.make("quotes")
  .add(HttpApiEndpoint.get("integrity", "/quotes/integrity").setUrlParams(IntegrityQuoteQuery).addSuccess(Envelope(IntegrityQuote)))
  .add(HttpApiEndpoint.get("identity", "/quotes/identity").setUrlParams(IdentityQuoteQuery).addSuccess(Envelope(IdentityQuote)))
{}

export class AgentKeys extends HttpApiGroup.make("keys")
  .add(HttpApiEndpoint.get("pubkey", "/keys/pubkey").addSuccess(Envelope(PubkeyResult)))
  .add(HttpApiEndpoint.post("ukey", "/keys/ukey").setPayload(UKeyRequest).addSuccess(Envelope(Empty)))
  .add(HttpApiEndpoint.post("vkey", "/keys/vkey").setPayload(VKeyRequest).addSuccess(Envelope(Empty)))
  .add(HttpApiEndpoint.get("verify", "/keys/verify").setUrlParams(VerifyQuery).addSuccess(Envelope(VerifyResult)))
{}

export class AgentInfoGroup extends HttpApiGroup.make("agent")
  .add(HttpApiEndpoint.get("info", "/agent/info").addSuccess(Envelope(AgentInfo)))
{}

export class AgentNotifications extends HttpApiGroup.make("notifications")
  .add(HttpApiEndpoint.post("revocation", "/notifications/revocation").setPayload(RevocationNotice).addSuccess(Envelope(Empty)))
{}

/** The versioned endpoints: a client's baseUrl ends in `/v<version>`. */
export class AgentApi extends HttpApi.make("agent")
  .add(AgentQuotes)
  .add(AgentKeys)
  .add(AgentInfoGroup)
  .add(AgentNotifications)
  .addError(BadRequestE)
  .addError(NotFoundE)
  .addError(InternalErrorE)
{}

/** The unversioned `/version`: a client's baseUrl is the agent's root. */
export class AgentVersionApi extends HttpApi.make("agent-version")
  .add(HttpApiGroup.make("version").add(HttpApiEndpoint.get("get", "/version").addSuccess(Envelope(AgentVersion))))
  .addError(BadRequestE)
  .addError(NotFoundE)
  .addError(InternalErrorE)
{}
