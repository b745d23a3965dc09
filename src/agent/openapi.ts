/** The pull agent's OpenAPI document (docs/openapi/agent.json, written by scripts/openapi.ts). */
import { openApiDocument, type JsonObject } from "../http/openapi.js"
import { AgentApi, AgentVersionApi } from "./Api.js"

export const agentDocument = (): JsonObject =>
  openApiDocument(AgentApi, {
    title: "attest agent (pull model)",
    description:
      "The pull agent's HTTPS API (port 9002; a client certificate from the trusted CA is required at the handshake): quotes, bootstrap keys, revocation notices. Wire-compatible with rust-keylime's agent.",
    versions: { supported: ["2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6"], current: "2.6" },
    unversioned: ["/version"],
    also: [AgentVersionApi],
    unsupportedVersionStatus: 400
  })
