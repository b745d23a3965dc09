/**
 * TPM structures from the wire: random bytes and the recorded vectors changed byte by byte. Every
 * parser answers with a TpmParseError (or the structure), never a throw nor a caught JavaScript error.
 */
import { describe } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import {
  decodeQuoteString, encodeQuoteString, parseAttest, parsePcrBlob, parsePcrSelection, parseSignature, parseTpm2bPublic, parseTpmtPublic,
  publicKeyOf, objectName, verifyQuoteString
} from "../../src/tpm/index.js"
import { decodeCredentialFile, parseEkCertificate } from "../../src/tpm/node.js"
import { parseCertifyResponse } from "../../src/tpm/tpm2tools/certifyCommand.js"
import { readdirSync } from "node:fs"
import { readVector, vectorPath } from "../support/vectors.js"
import { bytesNear } from "./arbitraries.js"
import { noThrow, typedOutcome } from "./checks.js"
import { fuzz } from "./harness.js"

const quoteFiles = ["quote1_rsa_sha256", "quote2_rsa_sha1sha256", "quote3_ecc_sha256", "quote4_rsa_sha1bank"]
const quotePart = (ext: string) => quoteFiles.map((f) => readVector("tpm", "quotes", `${f}.${ext}`))
const certify = (ext: string) => ["certify_rsa_pop", "certify_ecc_pop", "certify_rsa_noq"].map((f) => readVector("tpm", "certify", `${f}.${ext}`))
const attests = [...quotePart("attest"), ...certify("attest")]
const signatures = [...quotePart("sig"), ...certify("sig")]
const publics = ["ek/ek_rsa.pub", "ek/ek_ecc.pub", "ak/ak_rsa.pub", "ak/ak_ecc.pub"].map((f) => readVector("tpm", ...f.split("/")))
const blobs = quotePart("pcrs")
const akRsa = readVector("tpm", "ak", "ak_rsa.pub")
const akEcc = readVector("tpm", "ak", "ak_ecc.pub")

describe("fuzz: TPM structures", () => {
  fuzz({
    name: "tpm-attest",
    runs: 400,
    input: bytesNear(attests),
    check: (b) => void typedOutcome("parseAttest", "TpmParseError", () => parseAttest(b))
  })

  fuzz({
    name: "tpm-public",
    runs: 400,
    input: bytesNear(publics),
    check: (b) => {
      const two = typedOutcome("parseTpm2bPublic", "TpmParseError", () => parseTpm2bPublic(b))
      typedOutcome("parseTpmtPublic", "TpmParseError", () => parseTpmtPublic(b.subarray(2)))
      if (Either.isRight(two)) {
        typedOutcome("publicKeyOf", "TpmParseError", () => publicKeyOf(two.right))
        typedOutcome("objectName", "TpmParseError", () => objectName(two.right))
      }
    }
  })

  fuzz({
    name: "tpm-signature",
    runs: 400,
    input: bytesNear(signatures),
    check: (b) => void typedOutcome("parseSignature", "TpmParseError", () => parseSignature(b))
  })

  fuzz({
    name: "tpm-pcrs",
    runs: 400,
    input: fc.oneof(bytesNear(blobs), bytesNear(blobs.map((b) => b.subarray(0, 132)))),
    check: (b) => {
      typedOutcome("parsePcrBlob", "TpmParseError", () => parsePcrBlob(b))
      typedOutcome("parsePcrSelection", "TpmParseError", () => parsePcrSelection(b))
    }
  })

  const quotes = quoteFiles.map((_, i) => ({ attest: quotePart("attest")[i]!, signature: quotePart("sig")[i]!, pcrBlob: blobs[i]! }))
  fuzz({
    name: "tpm-quote-string",
    runs: 300,
    input: fc.tuple(
      fc.oneof(
        fc.string({ maxLength: 200 }),
        fc.tuple(fc.constantFrom(...quotes), fc.nat(), fc.string({ maxLength: 4 })).map(([q, at, junk]) => {
          const s = encodeQuoteString(q)
          const i = at % s.length
          return s.slice(0, i) + junk + s.slice(i + 1)
        }),
        fc.tuple(bytesNear(attests), bytesNear(signatures), bytesNear(blobs)).map(([attest, signature, pcrBlob]) =>
          "r" + [attest, signature, pcrBlob].map((x) => Buffer.from(x).toString("base64")).join(":")
        )
      ),
      fc.boolean()
    ),
    check: ([s, rsa]) => {
      typedOutcome("decodeQuoteString", "TpmParseError", () => decodeQuoteString(s))
      const r = typedOutcome("verifyQuoteString", "QuoteVerifyError", () => verifyQuoteString(rsa ? akRsa : akEcc, s, new TextEncoder().encode("nonce")))
      // no recorded quote was made over the nonce "nonce"
      if (Either.isRight(r)) throw new Error(`a quote string verified over a nonce it was not made for: ${s}`)
    }
  })

  const credentialFiles = readdirSync(vectorPath("tpm", "makecredential")).filter((n) => n.endsWith(".out")).map((n) => readVector("tpm", "makecredential", n))
  const ekCerts = ["ek_rsa_cert.der", "ek_ecc_cert.der", "ek_eccp384_cert.der"].map((n) => readVector("tpm", "ek", n))
  const certifyCommands = ["certify_cmd_rsa.bin", "certify_cmd_ecc.bin"].map((n) => readVector("tpm", "certify", n))
  fuzz({
    name: "tpm-credential",
    runs: 300,
    input: fc.oneof(bytesNear(credentialFiles), bytesNear(ekCerts, 64), bytesNear(certifyCommands)),
    check: (b) => {
      typedOutcome("decodeCredentialFile", "TpmParseError", () => decodeCredentialFile(b))
      typedOutcome("parseCertifyResponse", "TpmParseError", () => parseCertifyResponse(b))
      const ek = typedOutcome("parseEkCertificate", "EkCertificateError", () => parseEkCertificate(b))
      if (Either.isRight(ek)) noThrow("the EK certificate's fields", () => JSON.stringify(ek.right, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)))
    }
  })
})
