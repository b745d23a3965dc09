/**
 * The OpenAPI document of each attest server (src/ops/openapi.ts), by name: what
 * scripts/openapi.ts writes to docs/openapi/<name>.json (and checks in CI) and what a server serves
 * at `GET /openapi.json`. Adding a server is one entry here.
 */
import { AgentApi, AgentVersionApi } from "../agent/Api.js"
import { V2_VERSIONS } from "../http/versions.js"
import { RegistrarApi } from "../registrar/Api.js"
import { VERIFIER_UNVERSIONED, VerifierApi } from "../verifier/http/Api.js"
import { type JsonObject, openApiDocument } from "./openapi.js"

/** Paths the registrar serves without a version prefix. */
export const REGISTRAR_UNVERSIONED: ReadonlyArray<string> = ["/version", "/openapi.json"]

export const registrarDocument = (): JsonObject =>
  openApiDocument(RegistrarApi, {
    title: "attest registrar",
    description:
      "Agents register (POST) and activate (PUT …/activate) on the plain-HTTP port (8890); admins list, show and delete on the HTTPS port (8891) with an admin client certificate (mTLS). Wire-compatible with Keylime's registrar.",
    versions: V2_VERSIONS,
    unversioned: REGISTRAR_UNVERSIONED,
    servesDocument: true
  })

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

/** API 3.0's verify/* share the v2 shapes: the platform answers them with the v2 routes (as API 3.0). */
const withV3Verify = (doc: JsonObject): JsonObject => {
  const paths = doc["paths"] as JsonObject
  for (const name of ["identity", "evidence"]) {
    const item = structuredClone(paths[`/v{api_version}/verify/${name}`]) as JsonObject
    for (const op of Object.values(item) as Array<JsonObject>) {
      op["operationId"] = `${String(op["operationId"])}.v3`
      op["parameters"] = (op["parameters"] as Array<JsonObject>).filter((p) => p["name"] !== "api_version")
    }
    paths[`/v3.0/verify/${name}`] = item
  }
  return doc
}

export const verifierDocument = (): JsonObject =>
  withV3Verify(openApiDocument(VerifierApi, {
    title: "attest verifier",
    description:
      "The verifier's HTTPS API (port 8881): agents to attest, named runtime and measured-boot policies, and the stateless verify/identity and verify/evidence checks. Admin operations need an admin client certificate (mTLS); verify/* and /version are public; an agent may read its own status. Wire-compatible with Keylime's verifier (API 2.0-2.6). API 3.0 (/v3.0/…, JSON:API): the push model's sessions and attestations, and the administration of agents, IMA policies and UEFI reference states; its verify/* answer as in 2.x.",
    versions: V2_VERSIONS,
    unversioned: VERIFIER_UNVERSIONED,
    servesDocument: true,
    extraPaths: {
      "/.well-known/ear-jwks.json": {
        get: {
          tags: ["ear"],
          operationId: "earJwks",
          summary: "The public keys (JWKS, ES256) verify/evidence signs EAR attestation results with (public)",
          parameters: [],
          security: [],
          responses: { "200": { description: "A JWK set (RFC 7517)", content: { "application/jwk-set+json": { schema: { type: "object" } } } } }
        }
      }
    }
  }))

export const apiDocuments: ReadonlyArray<{ readonly name: string; readonly document: () => JsonObject }> = [
  { name: "registrar", document: registrarDocument },
  { name: "agent", document: agentDocument },
  { name: "verifier", document: verifierDocument }
]
