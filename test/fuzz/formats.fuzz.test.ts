/**
 * The other parsers of evidence and keys: IMA lists and runtime policies, UEFI event logs, SEV-SNP
 * reports and requests, EAR tokens and JWKS, DSSE envelopes, DER/X.509, the agent's zip. Each answers
 * with its typed error (or a value), never a throw nor a caught JavaScript error.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { zipSync } from "fflate"
import { readZip } from "../../src/agent/zip.js"
import { jsonDepthExceeds } from "../../src/http/body.js"
import { parseEventLog, parseEventLogBase64, parseEventLogInput } from "../../src/boot/index.js"
import { readCertificate } from "../../src/crypto/x509.js"
import { readPublicKey } from "../../src/crypto/keys.js"
import { readSpki } from "../../src/crypto/spki.js"
import { generateEarKey, jwksDocument, keysFromJwks, signEar, verifyEar } from "../../src/ear/index.js"
import { readVerdictFacts } from "../../src/ear/verdictFacts.js"
import { decodeClaims, decodeHeader } from "../../src/ear/claims.js"
import { decodeDsseEnvelopeJson, verificationKeyFrom, verifyDetached, verifyEnvelope } from "../../src/ima/dsse.js"
import { parseList } from "../../src/ima/entry.js"
import { parseSigHeader } from "../../src/ima/signatures.js"
import { compileRuntimePolicyDocument } from "../../src/ima/compileDocument.js"
import { loadRuntimePolicy } from "../../src/ima/load.js"
import { verifyIma } from "../../src/ima/verify.js"
import { certificateFields, readTlv } from "../../src/crypto/der.js"
import { parseCrl } from "../../src/pki/crl.js"
import { parseCertificate, parseCertificates } from "../../src/pki/parse.js"
import { parseSnpReport, parseVcek, verifyTeeEvidence } from "../../src/tee/index.js"
import { compile, makeLine, policyAllowing, tpmList } from "../ima/helpers.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { freshness, makeTestChain, milanReport, milanVcek, requestData, signedReport } from "../tee/support.js"
import { bytesNear, jsonWith, textNear } from "./arbitraries.js"
import { noThrow, typedOutcome } from "./checks.js"
import { fuzz } from "./harness.js"

const utf8 = (s: string) => new TextEncoder().encode(s)

describe("fuzz: evidence formats", () => {
  // --- IMA -----------------------------------------------------------------------------------------
  const list = tpmList()
  const lines = list.split("\n").filter((l) => l !== "")
  const bufLine = makeLine("ima-buf", `sha256:${"ab".repeat(32)}`, "kernel_version", Buffer.from("6.8.0-attest").toString("hex"))
  const sigLines = [...lines.filter((l) => l.includes(" ima-sig ")), bufLine]
  const policy = compile(policyAllowing(list))
  fuzz({
    name: "ima-list",
    runs: 200,
    input: fc.oneof(
      textNear([list, lines.slice(0, 6).join("\n") + "\n", sigLines.join("\n")], 300),
      fc.array(textNear([...lines.slice(0, 8), ...sigLines], 80), { maxLength: 8 }).map((ls) => ls.join("\n"))
    ),
    check: (text) => {
      const parsed = typedOutcome("parseList", "ImaParseError", () => parseList(text))
      if (Either.isRight(parsed)) for (const e of parsed.right) noThrow("parseSigHeader", () => parseSigHeader(e.extra))
      noThrow("verifyIma", () => verifyIma({ list: text, startEntry: 0, policy, quotedPcr10: { sha1: new Uint8Array(20), sha256: new Uint8Array(32) } }))
    }
  })

  const policies = [
    readVectorText("keylime", "test", "data", "runtime-policy-test.json"),
    readVectorText("keylime", "generated", "swtpm-quote-1", "runtime-policy-pass.json"),
    JSON.stringify(policyAllowing(lines.slice(0, 5).join("\n")))
  ]
  fuzz({
    name: "ima-policy",
    runs: 200,
    input: fc.oneof(textNear(policies, 200), jsonWith(["meta", "digests", "excludes", "keyrings", "ima", "ima-buf", "verification-keys", "release"]).map((j) => JSON.stringify(j) ?? "null")),
    check: (text) => {
      const loaded = typedOutcome("loadRuntimePolicy", "RuntimePolicyError", () => loadRuntimePolicy(text))
      // the loader's one-pass scan decides as JSON.parse and the general compiler would
      let doc: unknown
      try {
        doc = JSON.parse(text)
      } catch {
        if (Either.isRight(loaded)) throw new Error(`a policy that is not JSON was loaded: ${text.slice(0, 200)}`)
        return
      }
      const general = typedOutcome("compileRuntimePolicyDocument", "RuntimePolicyError", () => compileRuntimePolicyDocument(doc))
      if (Either.isRight(general) && Either.isRight(loaded)) {
        if (general.right.names !== loaded.right.names) throw new Error(`scan found ${loaded.right.names} names, JSON.parse ${general.right.names}`)
      } else if (Either.isRight(general) !== Either.isRight(loaded)) {
        const why = (e: Either.Either<unknown, unknown>) => (Either.isLeft(e) ? JSON.stringify(e.left) : "accepted")
        throw new Error(`the loader and the general path disagree: loader ${why(loaded)}, general ${why(general)}`)
      }
    }
  })

  // --- measured boot ------------------------------------------------------------------------------
  const eventLog = readVector("tpm", "eventlog", "event-gce-ubuntu-2104-log.bin")
  const mbLog = readVectorText("keylime", "test", "data", "mb_log.b64").trim()
  fuzz({
    name: "boot-event-log",
    runs: 150,
    input: fc.oneof(bytesNear([eventLog, eventLog.subarray(0, 4096)]), textNear([mbLog.slice(0, 4000)]).map(utf8)),
    check: (b) => {
      typedOutcome("parseEventLog", "EventLogParseError", () => parseEventLog(b))
      typedOutcome("parseEventLogInput", "EventLogParseError", () => parseEventLogInput(b))
      typedOutcome("parseEventLogBase64", "EventLogParseError", () => parseEventLogBase64(Buffer.from(b).toString("latin1")))
    }
  })

  // --- SEV-SNP ------------------------------------------------------------------------------------
  const chain = makeTestChain()
  const f = freshness()
  const report = signedReport(chain, f)
  const now = new Date("2026-11-21T00:00:00Z")
  const teeKeys = ["nonce", "tee-pubkey-x-b64", "tee-pubkey-y-b64", "tee-evidence", "tee", "evidence", "snp-report", "vcek"]
  fuzz({
    name: "snp-report",
    runs: 150,
    input: fc.oneof(
      bytesNear([milanReport(), report]).map((b) => ({ report: b, vcek: milanVcek(), data: undefined as unknown })),
      bytesNear([milanVcek(), chain.vcekDer], 64).map((v) => ({ report, vcek: v, data: undefined as unknown })),
      jsonWith(teeKeys, 5).map((data) => ({ report, vcek: chain.vcekDer, data })),
      fc.tuple(fc.constantFrom(...teeKeys), jsonWith([], 2)).map(([k, v]) => ({ report, vcek: chain.vcekDer, data: { ...requestData(report, f, chain.vcekDer), [k]: v } as unknown }))
    ),
    check: ({ report: r, vcek, data }) => {
      typedOutcome("parseSnpReport", "SnpReportError", () => parseSnpReport(r))
      typedOutcome("parseVcek", "VcekError", () => parseVcek(vcek))
      const v = noThrow("verifyTeeEvidence", () => verifyTeeEvidence(data ?? requestData(r, f, vcek), { now, roots: chain.roots }))
      if (v.valid && !(Buffer.from(r).equals(Buffer.from(report)) && Buffer.from(vcek).equals(Buffer.from(chain.vcekDer)))) {
        if (data === undefined) throw new Error("a changed SEV-SNP report or VCEK was accepted")
      }
    }
  })

  // --- EAR ----------------------------------------------------------------------------------------
  const earKey = generateEarKey()
  const token = Either.getOrThrow(signEar({ agentId: "agent-1", failures: [], appraised: { quote: true, ima: true, boot: true } }, earKey, { verifierId: "v", build: "b" }, 1_700_000_000))
  const keys = Either.getOrThrow(keysFromJwks(JSON.stringify(jwksDocument([earKey]))))
  const facts = JSON.stringify({ at: 1, nonce: "n", failures: [{ type: "t", message: "m" }], appraised: { quote: true, ima: false, boot: false, tee: false }, stop_polling: false })
  fuzz({
    name: "ear-token",
    runs: 200,
    input: fc.oneof(
      textNear([token], 100),
      fc.tuple(textNear(token.split("."), 40), textNear(token.split("."), 40), textNear(token.split("."), 40)).map((p) => p.join(".")),
      jsonWith(["keys", "kty", "crv", "x", "y", "kid"], 4).map((j) => JSON.stringify(j) ?? ""),
      textNear([JSON.stringify(jwksDocument([earKey])), facts])
    ),
    check: async (text) => {
      await Effect.runPromise(Effect.either(verifyEar(text, keys)).pipe(Effect.map((r) => {
        if (Either.isLeft(r)) typedOutcome("verifyEar", "EarError", () => r)
      })))
      typedOutcome("keysFromJwks", "string", () => keysFromJwks(text))
      typedOutcome("readVerdictFacts", "string", () => readVerdictFacts(text))
      noThrow("decodeHeader", () => decodeHeader(text))
      noThrow("decodeClaims", () => decodeClaims(text))
    }
  })

  // --- DSSE ---------------------------------------------------------------------------------------
  const signed = readVectorText("keylime", "test", "data", "runtime-policy-test-signed.json")
  const dssePub = readVectorText("keylime", "test", "data", "runtime-policy-pubkey.pub")
  const dsseKey = verificationKeyFrom(dssePub)!
  fuzz({
    name: "dsse",
    runs: 200,
    input: fc.oneof(
      textNear([signed], 200),
      jsonWith(["payload", "payloadType", "signatures", "keyid", "sig"], 4).map((j) => JSON.stringify(j) ?? ""),
      fc.tuple(bytesNear([utf8(signed)]), bytesNear([utf8(dssePub)])).map(([a, b]) => Buffer.from(a).toString("latin1") + "\u0000" + Buffer.from(b).toString("latin1"))
    ),
    check: (text) => {
      const env = noThrow("decodeDsseEnvelopeJson", () => decodeDsseEnvelopeJson(text))
      if (Either.isRight(env)) typedOutcome("verifyEnvelope", "DsseError", () => verifyEnvelope(env.right, dsseKey))
      const [a, b = dssePub] = text.split("\u0000")
      typedOutcome("verifyDetached", "DsseError", () => verifyDetached(utf8(a!), utf8(a!.slice(0, 72)), b))
      noThrow("verificationKeyFrom", () => verificationKeyFrom(b))
      typedOutcome("loadRuntimePolicy (signed)", "RuntimePolicyError", () => loadRuntimePolicy(text, { key: b, requireSignature: true }))
    }
  })

  // --- DER / X.509 --------------------------------------------------------------------------------
  const ders = [readVector("tpm", "ek", "ek_rsa_cert.der"), readVector("tpm", "ek", "ek_ecc_cert.der"), readVector("tpm", "ima", "ima_cert.der"), milanVcek(), chain.arkDer]
  const pemCert = readVectorText("tpm", "ca", "swtpm-localca-rootca-cert.pem")
  fuzz({
    name: "der",
    runs: 200,
    input: fc.oneof(bytesNear(ders, 64), textNear([pemCert, dssePub]).map(utf8)),
    check: (b) => {
      typedOutcome("readTlv", "PkiError", () => readTlv(b, 0))
      typedOutcome("certificateFields", "PkiError", () => certificateFields(b))
      typedOutcome("parseCertificate", "PkiError", () => parseCertificate(b))
      typedOutcome("parseCertificates", "PkiError", () => parseCertificates(b))
      typedOutcome("parseCrl", "PkiError", () => parseCrl(b))
      typedOutcome("readCertificate", "string", () => readCertificate(b))
      noThrow("readPublicKey", () => readPublicKey(b))
      noThrow("readSpki", () => readSpki(b))
    }
  })

  // --- request bodies: the depth check every server runs before JSON.parse ----------------------
  const depthOf = (v: unknown): number =>
    typeof v === "object" && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0
  fuzz({
    name: "json-body",
    runs: 300,
    input: fc.tuple(
      fc.oneof(
        jsonWith(["a", "[", "{\"", "\\"], 12).map((j) => JSON.stringify(j) ?? "null"),
        textNear(["{\"a\": [1, {\"b\": \"]]\\\"[[\"}], \"c\": {}}", "[[[[[\"\\\\\"]]]]]"], 80)
      ),
      fc.integer({ min: 0, max: 8 })
    ),
    check: ([text, limit]) => {
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        noThrow("jsonDepthExceeds", () => jsonDepthExceeds(text, limit))
        return
      }
      // the text nests at least as deep as the value it parses to (deeper when a repeated key's
      // earlier value was deeper: JSON.parse keeps the last); its canonical text exactly as deep
      const exceeds = depthOf(parsed) > limit
      if (exceeds && !jsonDepthExceeds(text, limit)) throw new Error(`jsonDepthExceeds(${JSON.stringify(text.slice(0, 200))}, ${limit}) let a value of depth ${depthOf(parsed)} through`)
      const canonical = JSON.stringify(parsed)
      if (jsonDepthExceeds(canonical, limit) !== exceeds) throw new Error(`jsonDepthExceeds(${JSON.stringify(canonical.slice(0, 200))}, ${limit}) says ${!exceeds}, the depth is ${depthOf(parsed)}`)
    }
  })

  // --- the agent's payload zip --------------------------------------------------------------------
  const zip = zipSync({ "autorun.sh": utf8("#!/bin/sh\necho hi\n"), "data/a.txt": [utf8("a".repeat(300)), { level: 6 }] })
  fuzz({
    name: "agent-zip",
    runs: 200,
    input: bytesNear([zip, zipSync({ "x": utf8("x") }, { level: 0 })]),
    check: (b) => void typedOutcome("readZip", "AgentRequestError", () => readZip(b))
  })
})
