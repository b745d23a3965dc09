import { readFileSync } from "node:fs"
import { AttestationEvidenceDocument } from "../schemas/Push.js"
import { JSON_API_MEDIA_TYPE } from "../src/http/jsonapi.js"
import { readDocument } from "../src/verifier/push/documents.js"
const text = readFileSync("/tmp/body-PATCH.json", "utf8")
const N = 20000
const time = (label: string, f: () => unknown) => {
  for (let i = 0; i < 3000; i++) f()
  const u0 = process.cpuUsage()
  for (let i = 0; i < N; i++) f()
  const u = process.cpuUsage(u0)
  console.log(label, ((u.user + u.system) / N).toFixed(2), "us")
}
time("JSON.parse phase 2", () => JSON.parse(text))
time("readDocument phase 2", () => readDocument(AttestationEvidenceDocument, "attestation", JSON_API_MEDIA_TYPE, text))
