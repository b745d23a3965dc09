/**
 * No false accept: a signed structure that verifies (the recorded quotes and certify attestations,
 * a SEV-SNP report from a test chain, an EAR, Keylime's DSSE-signed policy) is refused once any bit
 * of what was signed, the signature, the key's public area or the nonce changes.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { generateEarKey, jwksDocument, keysFromJwks, signEar, verifyEar } from "../../src/ear/index.js"
import { decodeDsseEnvelopeJson, verificationKeyFrom, verifyEnvelope } from "../../src/ima/dsse.js"
import { loadRuntimePolicy } from "../../src/ima/load.js"
import { verifyTeeEvidence } from "../../src/tee/index.js"
import { marshalTpm2bPublic, parsePcrBlob, parseTpm2bPublic, TPMA_OBJECT_RESERVED, verifyCertify, verifyQuote, type PcrBlob } from "../../src/tpm/index.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { freshness, makeTestChain, requestData, signedReport } from "../tee/support.js"
import { makeAk, makeQuote } from "../tpm/quoteFixture.js"
import { noThrow, typedOutcome } from "./checks.js"
import { fuzz } from "./harness.js"

const ascii = (s: string) => new TextEncoder().encode(s)
const flip = (b: Uint8Array, bit: number) => {
  const c = new Uint8Array(b)
  const i = bit % (c.length * 8)
  c[i >> 3]! ^= 1 << (i & 7)
  return c
}
const right = <A, E>(e: Either.Either<A, E>): A => Either.getOrThrowWith(e, (l) => new Error(JSON.stringify(l)))

/**
 * The AK's public area changed only in an attribute the specification defines (fixedTPM, noDA, …):
 * the same key, so its signature still verifies; what the attributes promise is the registrar's
 * check. Any other change (reserved bits included) must be refused.
 */
const onlyDefinedAttributes = (a: Uint8Array, b: Uint8Array): boolean => {
  const pa = parseTpm2bPublic(a)
  const pb = parseTpm2bPublic(b)
  if (Either.isLeft(pa) || Either.isLeft(pb)) return false
  const diff = (pa.right.attributes ^ pb.right.attributes) >>> 0
  const same = JSON.stringify({ ...pa.right, attributes: 0, bytes: 0 }) === JSON.stringify({ ...pb.right, attributes: 0, bytes: 0 })
  return same && diff !== 0 && (diff & TPMA_OBJECT_RESERVED) === 0
}

/** Which part of a signed structure changes, and which bit of it. */
const change = <P extends string>(...parts: ReadonlyArray<P>) => fc.record({ part: fc.constantFrom(...parts), bit: fc.nat() })

describe("fuzz: changed signed structures are refused", () => {
  const nonces = readVectorText("tpm", "quotes", "nonces.txt").trim().split(/\s+/)
  const pss = makeAk("rsa", "rsapss")
  const p384 = makeAk("ecc", "ecdsa", "sha384", 384)
  const made = (ak: typeof pss) => {
    const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 7, 10] }, { hash: "sha1", pcrs: [10] }])
    return { ak: marshalTpm2bPublic(ak.public), attest: q.attest, sig: q.signature, blob: q.pcrBlob, nonce: q.nonce, hashAlg: ak.hash }
  }
  const quotes = [
    ...[["quote1_rsa_sha256", "rsa", 0], ["quote2_rsa_sha1sha256", "rsa", 1], ["quote3_ecc_sha256", "ecc", 2], ["quote4_rsa_sha1bank", "rsa", 3]].map(([f, ak, n]) => ({
      ak: readVector("tpm", "ak", `ak_${ak}.pub`),
      attest: readVector("tpm", "quotes", `${f}.attest`),
      sig: readVector("tpm", "quotes", `${f}.sig`),
      blob: readVector("tpm", "quotes", `${f}.pcrs`),
      nonce: ascii(nonces[n as number]!),
      hashAlg: "sha256" as const
    })),
    made(pss),
    made(p384)
  ]
  const quoteInput = (q: (typeof quotes)[number], pcrs: PcrBlob = right(parsePcrBlob(q.blob))) => ({ akPublic: q.ak, attest: q.attest, signature: q.sig, pcrs, nonce: q.nonce, hashAlg: q.hashAlg })
  for (const q of quotes) right(verifyQuote(quoteInput(q)))

  fuzz({
    name: "quote-tamper",
    runs: 300,
    input: fc.tuple(fc.nat({ max: quotes.length - 1 }), change("attest", "signature", "ak", "nonce", "pcr value")),
    check: ([i, c]) => {
      const q = quotes[i]!
      const pcrs = right(parsePcrBlob(q.blob))
      let input = quoteInput(q, pcrs)
      if (c.part === "attest") input = { ...input, attest: flip(q.attest, c.bit) }
      if (c.part === "signature") input = { ...input, signature: flip(q.sig, c.bit) }
      if (c.part === "ak") input = { ...input, akPublic: flip(q.ak, c.bit) }
      if (c.part === "nonce") input = { ...input, nonce: flip(q.nonce, c.bit) }
      if (c.part === "pcr value") {
        const bank = pcrs.values[c.bit % pcrs.values.length]!
        const pcr = [...bank.values.keys()][(c.bit >> 4) % bank.values.size]!
        const values = new Map(bank.values)
        values.set(pcr, flip(bank.values.get(pcr)!, c.bit >> 8))
        input = { ...input, pcrs: { ...pcrs, values: pcrs.values.map((b) => (b === bank ? { hash: b.hash, values } : b)) } }
      }
      const r = typedOutcome("verifyQuote", "QuoteVerifyError", () => verifyQuote(input))
      if (Either.isRight(r) && !(c.part === "ak" && onlyDefinedAttributes(q.ak, input.akPublic))) throw new Error(`quote ${i} verified with bit ${c.bit} of its ${c.part} changed`)
    }
  })

  const certifies = [["certify_rsa_pop", "rsa", 0, "rsassa"], ["certify_ecc_pop", "ecc", 2, "ecdsa"]].map(([f, ak, n, scheme]) => ({
    ak: readVector("tpm", "ak", `ak_${ak}.pub`),
    attest: readVector("tpm", "certify", `${f}.attest`),
    sig: readVector("tpm", "certify", `${f}.sig`),
    nonce: ascii(nonces[n as number]!),
    scheme: scheme as "rsassa" | "ecdsa"
  }))
  const certifyInput = (c: (typeof certifies)[number]) => ({ objectPublic: c.ak, attest: c.attest, signature: c.sig, nonce: c.nonce, hashAlg: "sha256" as const, scheme: c.scheme })
  for (const c of certifies) right(verifyCertify(certifyInput(c)))

  fuzz({
    name: "certify-tamper",
    runs: 300,
    input: fc.tuple(fc.nat({ max: certifies.length - 1 }), change("attest", "signature", "object", "nonce")),
    check: ([i, c]) => {
      const v = certifies[i]!
      let input = certifyInput(v)
      if (c.part === "attest") input = { ...input, attest: flip(v.attest, c.bit) }
      if (c.part === "signature") input = { ...input, signature: flip(v.sig, c.bit) }
      if (c.part === "object") input = { ...input, objectPublic: flip(v.ak, c.bit) }
      if (c.part === "nonce") input = { ...input, nonce: flip(v.nonce, c.bit) }
      const r = typedOutcome("verifyCertify", "QuoteVerifyError", () => verifyCertify(input))
      if (Either.isRight(r) && !(c.part === "object" && onlyDefinedAttributes(v.ak, input.objectPublic))) throw new Error(`certify ${i} verified with bit ${c.bit} of its ${c.part} changed`)
    }
  })

  const chain = makeTestChain()
  const f = freshness()
  const report = signedReport(chain, f)
  const now = new Date("2026-11-21T00:00:00Z")
  const teeOk = verifyTeeEvidence(requestData(report, f, chain.vcekDer), { now, roots: chain.roots })
  if (!teeOk.valid) throw new Error(`the test report does not verify: ${JSON.stringify(teeOk.failures)}`)
  fuzz({
    name: "snp-tamper",
    runs: 300,
    input: change("report", "vcek", "nonce"),
    check: (c) => {
      const data = c.part === "report"
        ? requestData(flip(report, c.bit), f, chain.vcekDer)
        : c.part === "vcek"
        ? requestData(report, f, flip(chain.vcekDer, c.bit))
        : requestData(report, { ...f, nonce: flip(f.nonce, c.bit) }, chain.vcekDer)
      const v = noThrow("verifyTeeEvidence", () => verifyTeeEvidence(data, { now, roots: chain.roots }))
      if (v.valid) throw new Error(`a SEV-SNP report verified with bit ${c.bit} of its ${c.part} changed`)
    }
  })

  const earKey = generateEarKey()
  const token = right(signEar({ agentId: "agent-1", failures: [], appraised: { quote: true, ima: true, boot: true }, nonce: "k5a0PtTvWGYRTX8RGxWm" }, earKey, { verifierId: "v", build: "b" }, 1_700_000_000))
  const keys = right(keysFromJwks(JSON.stringify(jwksDocument([earKey]))))
  const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
  const segments = (t: string) => t.split(".").map((s) => Buffer.from(s, "base64url").toString("hex"))
  fuzz({
    name: "ear-tamper",
    runs: 300,
    input: fc.tuple(fc.nat({ max: token.length - 1 }), fc.oneof(fc.constantFrom(...B64URL), fc.constantFrom(".", "=", " ", "+", "/", ""))),
    check: async ([at, ch]) => {
      const changed = token.slice(0, at) + ch + token.slice(at + 1)
      if (changed === token) return
      const r = await Effect.runPromise(Effect.either(verifyEar(changed, keys)))
      // a token that decodes to the same header, claims and signature is the same token
      if (Either.isRight(r) && JSON.stringify(segments(changed)) !== JSON.stringify(segments(token))) {
        throw new Error(`an EAR verified with character ${at} changed to ${JSON.stringify(ch)}`)
      }
    }
  })

  const signed = readVectorText("keylime", "test", "data", "runtime-policy-test-signed.json")
  const pub = readVectorText("keylime", "test", "data", "runtime-policy-pubkey.pub")
  const env = right(decodeDsseEnvelopeJson(signed))
  const key = verificationKeyFrom(pub)!
  right(verifyEnvelope(env, key))
  const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"))
  fuzz({
    name: "dsse-tamper",
    runs: 300,
    input: change("payload", "signature", "payloadType"),
    check: (c) => {
      const sig = env.signatures[0]!
      const changed = c.part === "payload"
        ? { ...env, payload: Buffer.from(flip(b64(env.payload), c.bit)).toString("base64") }
        : c.part === "signature"
        ? { ...env, signatures: [{ ...sig, sig: Buffer.from(flip(b64(sig.sig), c.bit)).toString("base64") }] }
        : { ...env, payloadType: Buffer.from(flip(ascii(env.payloadType), c.bit)).toString("latin1") }
      const r = typedOutcome("verifyEnvelope", "DsseError", () => verifyEnvelope(changed, key))
      if (Either.isRight(r)) throw new Error(`a DSSE envelope verified with bit ${c.bit} of its ${c.part} changed`)
      const loaded = typedOutcome("loadRuntimePolicy", "RuntimePolicyError", () => loadRuntimePolicy(JSON.stringify(changed), { key: pub, requireSignature: true }))
      if (Either.isRight(loaded)) throw new Error(`a runtime policy loaded with bit ${c.bit} of its envelope's ${c.part} changed`)
    }
  })
})
