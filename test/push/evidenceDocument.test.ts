import { describe, expect, it } from "vitest"
import { AttestationEvidenceDocument } from "../../schemas/Push.js"
import { readDocument } from "../../src/verifier/http/v3/documents.js"
import { fastRead, readEvidenceDocument } from "../../src/verifier/http/v3/evidenceDocument.js"

const MEDIA = "application/vnd.api+json"
const b64 = (n: number) => Buffer.alloc(n, 7).toString("base64")
const quote = { evidence_class: "certification", evidence_type: "tpm_quote", data: { subject_data: b64(30), message: b64(15), signature: b64(25) } }
const ima = { evidence_class: "log", evidence_type: "ima_log", data: { entry_count: 3, entries: "10 abc ima-ng sha256:00 /x\n" } }
const uefi = { evidence_class: "log", evidence_type: "uefi_log", data: { entries: b64(40) } }
const doc = (items: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({ data: { type: "attestation", attributes: { evidence_collected: items } }, ...extra })

// well formed (read by hand) and refused ones (each left to the schema), with excess members the schema drops
const cases: ReadonlyArray<string> = [
  doc([quote, ima]),
  doc([quote, uefi, { ...ima, data: { entries: "" } }]),
  doc([{ ...quote, extra: 1, data: { ...quote.data, more: "x" } }], { meta: {}, links: {} }),
  doc([]),
  doc([{ ...quote, data: { ...quote.data, message: "not base64!" } }]),
  doc([{ ...ima, data: { entry_count: -1, entries: "" } }]),
  doc([{ ...ima, data: { entry_count: 1.5, entries: "" } }]),
  doc([{ ...ima, data: { entry_count: 1 } }]),
  doc([{ ...uefi, evidence_class: "certification" }]),
  doc([{ ...quote, data: null }]),
  doc([quote], { included: [] }),
  JSON.stringify({ data: { type: "session", attributes: { evidence_collected: [] } } }),
  JSON.stringify({ data: { type: "attestation", attributes: { evidence_collected: {} } } }),
  JSON.stringify({ data: { type: "attestation" } }),
  "[1]",
  "{not json"
]

describe("phase 2's evidence document read by hand", () => {
  it("gives readDocument's answer for well-formed and refused documents alike", () => {
    for (const text of cases) {
      expect(readEvidenceDocument(MEDIA, text)).toEqual(readDocument(AttestationEvidenceDocument, "attestation", MEDIA, text))
    }
    // the well-formed ones did not go through the schema
    for (const text of cases.slice(0, 4)) expect(fastRead(text)).not.toEqual(undefined)
    expect(readEvidenceDocument("text/plain", cases[0]!)).toEqual(readDocument(AttestationEvidenceDocument, "attestation", "text/plain", cases[0]!))
  })
})
