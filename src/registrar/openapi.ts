/**
 * The registrar's OpenAPI document (src/http/openapi.ts builds it from RegistrarApi): served at
 * `GET /openapi.json` by Server.ts and written to docs/openapi/registrar.json (scripts/openapi.ts).
 */
import { openApiDocument, type JsonObject } from "../http/openapi.js"
import { V2_VERSIONS } from "../http/versions.js"
import { RegistrarApi } from "./Api.js"

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
