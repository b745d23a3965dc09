/**
 * The OpenAPI document of each attest server, by name: what scripts/openapi.ts writes to
 * docs/openapi/<name>.json (and checks in CI). Each server owns its document (beside its API) and
 * serves it at `GET /openapi.json`; only this list, at the top, knows them all. Adding a server is
 * one entry here.
 */
import { agentDocument } from "../agent/openapi.js"
import type { JsonObject } from "../http/openapi.js"
import { registrarDocument } from "../registrar/openapi.js"
import { verifierDocument } from "../verifier/http/openapi.js"

export const apiDocuments: ReadonlyArray<{ readonly name: string; readonly document: () => JsonObject }> = [
  { name: "registrar", document: registrarDocument },
  { name: "agent", document: agentDocument },
  { name: "verifier", document: verifierDocument }
]
