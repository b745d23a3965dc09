/**
 * The verifier's OpenAPI document: served at `GET /openapi.json` by src/verifier/Server.ts and
 * written to docs/openapi/verifier.json (scripts/openapi.ts).
 */
import { openApiDocument, type JsonObject } from "../../http/openapi.js"
import { V2_VERSIONS } from "../../http/versions.js"
import { VERIFIER_UNVERSIONED, VerifierApi } from "./Api.js"

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
