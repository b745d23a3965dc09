/** Reading API 3.0 request bodies: 415 for the media type, 400 for the document shape, 422 with pointers per field. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { AttestationCreateDocument } from "../../schemas/Push.js"
import { JSON_API_MEDIA_TYPE } from "../../src/http/jsonapi.js"
import { readDocument } from "../../src/verifier/http/v3/documents.js"

const read = (body: unknown, contentType = JSON_API_MEDIA_TYPE) =>
  Either.flip(readDocument(AttestationCreateDocument, "attestation", contentType, typeof body === "string" ? body : JSON.stringify(body)))

describe("push documents", () => {
  it("wrong media type is 415", () => {
    expect(read({}, "application/json")).toEqual(Either.right({ _tag: "UnsupportedMediaType", received: "application/json" }))
  })
  it("not a document, an unknown member, a wrong type are 400 invalid_request naming the member", () => {
    expect(read("{")).toMatchObject(Either.right({ _tag: "Invalid", status: 400, errors: [{ status: "400", code: "invalid_request" }] }))
    expect(read({ data: { type: "attestation", attributes: {} }, extra: 1 })).toMatchObject(
      Either.right({ status: 400, errors: [{ source: { pointer: "/extra" } }] })
    )
    expect(read({ data: { type: "session", attributes: {} } })).toMatchObject(
      Either.right({ status: 400, errors: [{ code: "invalid_request", source: { pointer: "/data/type" } }] })
    )
  })
  it("a missing or bad attribute is 422 invalid_resource_data with its pointer", () => {
    expect(read({ data: { type: "attestation", attributes: {} } })).toEqual(Either.right({
      _tag: "Invalid",
      status: 422,
      errors: [{ status: "422", code: "invalid_resource_data", detail: "Attribute 'evidence_supported' is required.", source: { pointer: "/data/attributes/evidence_supported" } }]
    }))
    const bad = read({ data: { type: "attestation", attributes: { evidence_supported: "x" } } })
    expect(bad).toMatchObject(Either.right({ status: 422, errors: [{ source: { pointer: "/data/attributes/evidence_supported" } }] }))
  })
})
