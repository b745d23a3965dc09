/** Every TPM vector: parses, re-encodes byte for byte, and verifies where it comes with its AK and nonce. */
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  decodeQuoteString, ekQualifiedName, encodeQuoteString, marshalAttest, marshalPcrBlob, marshalSignature, marshalTpm2bPublic,
  nameOf, parseAttest, parsePcrBlob, parseSignature, parseTpm2bPublic, qualifiedName, verifyCertify, verifyQuote,
  verifyQuoteString
} from "../../src/tpm/index.js"
import { decodeCredentialFile, ekCertificateMatchesPublic, encodeCredentialFile, parseEkCertificate } from "../../src/tpm/node.js"
import { eachCryptoPort, settled } from "../support/cryptoPorts.js"
import { readVector, readVectorText, vectorPath } from "../support/vectors.js"

// the verifications with every RSA check answered (the portable port asks WebCrypto)
const vQuote = (...a: Parameters<typeof verifyQuote>) => settled(() => verifyQuote(...a))
const vCertify = (...a: Parameters<typeof verifyCertify>) => settled(() => verifyCertify(...a))
const vQuoteString = (...a: Parameters<typeof verifyQuoteString>) => settled(() => verifyQuoteString(...a))

const ascii = (s: string) => new TextEncoder().encode(s)
const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected Right, got ${JSON.stringify(e.left)}`)
  return e.right
}
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

const nonces = readVectorText("tpm", "quotes", "nonces.txt").trim().split(/\s+/)
const quotes = [
  { file: "quote1_rsa_sha256", ak: "rsa", nonce: nonces[0]!, banks: "sha256:0,1,10,16" },
  { file: "quote2_rsa_sha1sha256", ak: "rsa", nonce: nonces[1]!, banks: "sha1:0,1,10,16+sha256:0,1,10,16" },
  { file: "quote3_ecc_sha256", ak: "ecc", nonce: nonces[2]!, banks: "sha256:0,1,2,3,4,5,6,7,8,9,10,14,16" },
  { file: "quote4_rsa_sha1bank", ak: "rsa", nonce: nonces[3]!, banks: "sha1:0,1,10,16" }
] as const

const selectionText = (sel: ReadonlyArray<{ hash: string; pcrs: ReadonlyArray<number> }>) =>
  sel.map((b) => `${b.hash}:${b.pcrs.join(",")}`).join("+")

eachCryptoPort("vectors/tpm public areas", () => {
  for (const f of ["ek/ek_rsa.pub", "ek/ek_ecc.pub", "ak/ak_rsa.pub", "ak/ak_ecc.pub"]) {
    it(`${f} parses and re-encodes byte for byte`, async () => {
      const bytes = readVector("tpm", ...f.split("/"))
      const pub = right(parseTpm2bPublic(bytes))
      expect(hex(marshalTpm2bPublic(pub))).toBe(hex(bytes))
      // without the parsed bytes: marshalled from the fields alone
      const { bytes: _parsed, ...fields } = pub
      expect(hex(marshalTpm2bPublic(fields))).toBe(hex(bytes))
    })
  }
  for (const ak of ["rsa", "ecc"]) {
    it(`computes the ${ak} AK name that tpm2_createak wrote`, async () => {
      const pub = right(parseTpm2bPublic(readVector("tpm", "ak", `ak_${ak}.pub`)))
      expect(hex(nameOf(pub))).toBe(hex(readVector("tpm", "ak", `ak_${ak}.name`)))
      expect(pub.attributes).toBe(0x00050072)
    })
  }
  it("EK publics carry the standard template (attributes, policy, AES-128-CFB)", async () => {
    for (const ek of ["ek_rsa", "ek_ecc"]) {
      const pub = right(parseTpm2bPublic(readVector("tpm", "ek", `${ek}.pub`)))
      expect(pub.attributes).toBe(0x000300b2)
      expect(hex(pub.authPolicy)).toBe("837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa")
      expect(pub.type === "rsa" || pub.type === "ecc" ? pub.symmetric : null).toEqual({ alg: 0x0006, keyBits: 128, mode: 0x0043 })
    }
  })
})

eachCryptoPort("vectors/tpm quotes", () => {
  for (const q of quotes) {
    const attest = readVector("tpm", "quotes", `${q.file}.attest`)
    const sig = readVector("tpm", "quotes", `${q.file}.sig`)
    const blob = readVector("tpm", "quotes", `${q.file}.pcrs`)
    const ak = readVector("tpm", "ak", `ak_${q.ak}.pub`)

    it(`${q.file}: attest, signature and PCR blob re-encode byte for byte`, async () => {
      expect(hex(marshalAttest(right(parseAttest(attest))))).toBe(hex(attest))
      expect(hex(marshalSignature(right(parseSignature(sig))))).toBe(hex(sig))
      const pcrs = right(parsePcrBlob(blob))
      expect(selectionText(pcrs.selection)).toBe(q.banks)
      expect(hex(marshalPcrBlob(pcrs))).toBe(hex(blob))
    })

    it(`${q.file}: verifies with its AK and nonce`, async () => {
      const v = right(await vQuote({ akPublic: ak, attest, signature: sig, pcrs: right(parsePcrBlob(blob)), nonce: ascii(q.nonce), hashAlg: "sha256" }))
      expect(v.clockInfo).toEqual({ clock: v.clockInfo.clock, resetCount: 5, restartCount: 0, safe: false })
      expect(v.firmwareVersion).toBe(0x2019102300163636n)
      expect(selectionText(v.attest.attested.pcrSelect)).toBe(q.banks)
    })

    it(`${q.file}: qualifiedSigner is the AK's qualified name under the EK`, async () => {
      const ekName = nameOf(right(parseTpm2bPublic(readVector("tpm", "ek", `ek_${q.ak}.pub`))))
      const qn = right(qualifiedName(right(ekQualifiedName(ekName)), nameOf(right(parseTpm2bPublic(ak)))))
      expect(hex(right(parseAttest(attest)).qualifiedSigner)).toBe(hex(qn))
    })

    it(`${q.file}: rejects another nonce, another AK and a different hash expectation`, async () => {
      const pcrs = right(parsePcrBlob(blob))
      const base = { akPublic: ak, attest, signature: sig, pcrs, nonce: ascii(q.nonce) }
      const wrongNonce = await vQuote({ ...base, nonce: ascii("x".repeat(20)) })
      expect(Either.isLeft(wrongNonce) && wrongNonce.left.check).toBe("nonce")
      const other = readVector("tpm", "ak", q.ak === "rsa" ? "ak_ecc.pub" : "ak_rsa.pub")
      const wrongAk = await vQuote({ ...base, akPublic: other })
      expect(Either.isLeft(wrongAk) && wrongAk.left.check).toBe("scheme")
      const wrongHash = await vQuote({ ...base, hashAlg: "sha384" })
      expect(Either.isLeft(wrongHash) && wrongHash.left.check).toBe("hash_alg")
    })
  }

  it("quote4 (sha1 bank) digests its PCRs with the signing hash sha256", async () => {
    const pcrs = right(parsePcrBlob(readVector("tpm", "quotes", "quote4_rsa_sha1bank.pcrs")))
    const h = createHash("sha256")
    for (const v of pcrs.values[0]!.values.values()) h.update(v)
    const attest = right(parseAttest(readVector("tpm", "quotes", "quote4_rsa_sha1bank.attest")))
    expect(attest.type === "quote" && hex(attest.attested.pcrDigest)).toBe(h.digest("hex"))
  })

  it("rejects quote1's attest with quote2's PCR values for the reason pcr_selection", async () => {
    const r = await vQuote({
      akPublic: readVector("tpm", "ak", "ak_rsa.pub"),
      attest: readVector("tpm", "quotes", "quote1_rsa_sha256.attest"),
      signature: readVector("tpm", "quotes", "quote1_rsa_sha256.sig"),
      pcrs: right(parsePcrBlob(readVector("tpm", "quotes", "quote2_rsa_sha1sha256.pcrs"))),
      nonce: ascii(nonces[0]!)
    })
    expect(Either.isLeft(r) && r.left.check).toBe("pcr_selection")
  })

  it("rejects quote1 with quote4's PCR values (same selection shape, other bank) and with a changed PCR 16", async () => {
    const pcrs = right(parsePcrBlob(readVector("tpm", "quotes", "quote1_rsa_sha256.pcrs")))
    const bank = pcrs.values[0]!
    const changed = new Map(bank.values)
    changed.set(16, new Uint8Array(32).fill(7))
    const r = await vQuote({
      akPublic: readVector("tpm", "ak", "ak_rsa.pub"),
      attest: readVector("tpm", "quotes", "quote1_rsa_sha256.attest"),
      signature: readVector("tpm", "quotes", "quote1_rsa_sha256.sig"),
      pcrs: { selection: pcrs.selection, values: [{ hash: bank.hash, values: changed }] },
      nonce: ascii(nonces[0]!)
    })
    expect(Either.isLeft(r) && r.left.check).toBe("pcr_digest")
  })
})

eachCryptoPort("vectors/tpm certify", () => {
  for (const c of [{ file: "certify_rsa_pop", ak: "rsa", nonce: nonces[0]! }, { file: "certify_ecc_pop", ak: "ecc", nonce: nonces[2]! }]) {
    const attest = readVector("tpm", "certify", `${c.file}.attest`)
    const sig = readVector("tpm", "certify", `${c.file}.sig`)
    const ak = readVector("tpm", "ak", `ak_${c.ak}.pub`)
    it(`${c.file}: re-encodes and verifies as a proof of possession over its nonce`, async () => {
      expect(hex(marshalAttest(right(parseAttest(attest))))).toBe(hex(attest))
      expect(hex(marshalSignature(right(parseSignature(sig))))).toBe(hex(sig))
      const v = right(await vCertify({ objectPublic: ak, attest, signature: sig, nonce: ascii(c.nonce), hashAlg: "sha256", scheme: c.ak === "rsa" ? "rsassa" : "ecdsa" }))
      expect(v.attest.type).toBe("certify")
      expect(v.clockInfo.safe).toBe(true)
    })
    it(`${c.file}: rejects a wrong nonce, a downgrade expectation and a certify of another object`, async () => {
      const wrong = await vCertify({ objectPublic: ak, attest, signature: sig, nonce: ascii("nope") })
      expect(Either.isLeft(wrong) && wrong.left.check).toBe("nonce")
      const downgrade = await vCertify({ objectPublic: ak, attest, signature: sig, nonce: ascii(c.nonce), hashAlg: "sha384" })
      expect(Either.isLeft(downgrade) && downgrade.left.check).toBe("hash_alg")
      const otherObject = await vCertify({
        objectPublic: readVector("tpm", "ek", `ek_${c.ak}.pub`), signerPublic: ak, attest, signature: sig, nonce: ascii(c.nonce)
      })
      expect(Either.isLeft(otherObject) && otherObject.left.check).toBe("name")
    })
  }
  it("certify_rsa_noq carries tpm2_certify 5.4's fixed qualifying data 00ff55aa", async () => {
    const attest = readVector("tpm", "certify", "certify_rsa_noq.attest")
    const sig = readVector("tpm", "certify", "certify_rsa_noq.sig")
    expect(hex(right(parseAttest(attest)).extraData)).toBe("00ff55aa")
    expect(Either.isRight(await vCertify({ objectPublic: readVector("tpm", "ak", "ak_rsa.pub"), attest, signature: sig, nonce: Uint8Array.of(0, 0xff, 0x55, 0xaa) }))).toBe(true)
  })
  it("a certify attestation is not accepted as a quote (type check)", async () => {
    const r = await vQuote({
      akPublic: readVector("tpm", "ak", "ak_rsa.pub"),
      attest: readVector("tpm", "certify", "certify_rsa_pop.attest"),
      signature: readVector("tpm", "certify", "certify_rsa_pop.sig"),
      pcrs: right(parsePcrBlob(readVector("tpm", "quotes", "quote1_rsa_sha256.pcrs"))),
      nonce: ascii(nonces[0]!)
    })
    expect(Either.isLeft(r) && r.left.check).toBe("type")
  })
})

describe("vectors/tpm makecredential and EK certificates", () => {
  const dir = vectorPath("tpm", "makecredential")
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".out"))) {
    it(`${f} decodes and re-encodes byte for byte`, async () => {
      const bytes = readVector("tpm", "makecredential", f)
      const blob = right(decodeCredentialFile(bytes))
      expect(hex(encodeCredentialFile(blob))).toBe(hex(bytes))
      expect(blob.credential.length).toBe(2 + 32 + 34)
      expect(blob.secret.length).toBe(f.includes("rsa") ? 256 : 0x44)
    })
  }
  it("EK certificates match their EK publics and not the other EK", async () => {
    expect(right(ekCertificateMatchesPublic(readVector("tpm", "ek", "ek_rsa_cert.der"), readVector("tpm", "ek", "ek_rsa.pub"))).issuer).toBe("CN=swtpm-localca")
    expect(right(ekCertificateMatchesPublic(readVector("tpm", "ek", "ek_ecc_cert.der"), readVector("tpm", "ek", "ek_ecc.pub"))).subject).toBe("CN=unknown")
    const mismatch = ekCertificateMatchesPublic(readVector("tpm", "ek", "ek_rsa_cert.der"), readVector("tpm", "ek", "ek_ecc.pub"))
    expect(Either.isLeft(mismatch) && mismatch.left.reason).toBe("mismatch")
  })
  it("reads the TCG SAN attributes and tolerates NV padding after the DER", async () => {
    const der = readVector("tpm", "ek", "ek_rsa_cert.der")
    const padded = new Uint8Array(der.length + 100).fill(0xff)
    padded.set(der)
    const c = right(parseEkCertificate(padded))
    expect(c.der.length).toBe(der.length)
    expect([c.tpmManufacturer, c.tpmModel, c.tpmVersion]).toEqual(["id:00001014", "swtpm", "id:20191023"])
    expect(right(parseEkCertificate(readVector("tpm", "ek", "ek_eccp384_cert.der"))).publicKey.asymmetricKeyDetails?.namedCurve).toBe("secp384r1")
  })
})

eachCryptoPort("vectors/keylime quotes", () => {
  const dir = ["keylime", "generated", "swtpm-quote-1"]
  const quote = readVectorText(...dir, "quote.txt").trim()
  const ak = readVector(...dir, "ak.pub")

  it("swtpm-quote-1: the quote string splits into q.msg, q.sig, q.pcrs and re-encodes", async () => {
    const parts = right(decodeQuoteString(quote))
    expect(hex(parts.attest)).toBe(hex(readVector(...dir, "q.msg")))
    expect(hex(parts.signature)).toBe(hex(readVector(...dir, "q.sig")))
    expect(hex(parts.pcrBlob)).toBe(hex(readVector(...dir, "q.pcrs")))
    expect(encodeQuoteString(parts)).toBe(quote)
  })

  it("swtpm-quote-1 verifies with nonce TestNonce1234567890A and yields the stated PCR 10 and 16", async () => {
    const v = right(await vQuoteString(ak, quote, ascii("TestNonce1234567890A"), { hashAlg: "sha256", scheme: "rsassa" }))
    const bank = v.pcrs.find((b) => b.hash === "sha256")!
    expect(hex(bank.values.get(10)!)).toBe("7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80")
    expect(hex(bank.values.get(16)!)).toBe("207ecd103a5f02951cf689078dea3e8538250fe18fa41076a7954e9da626de7d")
  })

  it("swtpm-quote-1 with nonce WrongNonce0000000000 fails for the reason nonce (Keylime: quote_validation)", async () => {
    const r = await vQuoteString(ak, quote, ascii("WrongNonce0000000000"))
    expect(Either.isLeft(r) && r.left.check).toBe("nonce")
  })

  it("swtpm-quote-1's PCR 16 is bound to agent-pubkey.pem and not to a different key (Keylime: invalid_pcr_16)", async () => {
    const v = right(await vQuoteString(ak, quote, ascii("TestNonce1234567890A")))
    const pcr16 = hex(v.pcrs[0]!.values.get(16)!)
    const extend = (pem: string) => createHash("sha256").update(new Uint8Array(32)).update(createHash("sha256").update(pem).digest()).digest("hex")
    expect(pcr16).toBe(extend(readFileSync(vectorPath(...dir, "agent-pubkey.pem"), "utf8")))
    expect(pcr16).not.toBe(extend(readFileSync(vectorPath("tpm", "ak", "ak_rsa.pem"), "utf8")))
  })

  it("test-data/files quote.out, quotesig.out, quotepcr.out and ak.pub/ek.pub/mkcred.out re-encode byte for byte", async () => {
    const f = (n: string) => readVector("keylime", "test-data", "files", n)
    expect(hex(marshalAttest(right(parseAttest(f("quote.out")))))).toBe(hex(f("quote.out")))
    expect(hex(marshalSignature(right(parseSignature(f("quotesig.out")))))).toBe(hex(f("quotesig.out")))
    const pcrs = right(parsePcrBlob(f("quotepcr.out")))
    expect(selectionText(pcrs.selection)).toBe("sha256:15,16,22")
    expect(hex(marshalPcrBlob(pcrs))).toBe(hex(f("quotepcr.out")))
    for (const p of ["ak.pub", "ek.pub"]) expect(hex(marshalTpm2bPublic(right(parseTpm2bPublic(f(p)))))).toBe(hex(f(p)))
    expect(hex(encodeCredentialFile(right(decodeCredentialFile(f("mkcred.out")))))).toBe(hex(f("mkcred.out")))
    expect(hex(nameOf(right(parseTpm2bPublic(f("ak.pub")))))).toBe(hex(f("ak.name")))
  })
})

describe("vectors/rust-keylime quotes", () => {
  it("test-quote.txt decodes to 93/262/668 bytes and re-encodes byte for byte", async () => {
    const quote = readVectorText("rust-keylime", "keylime", "test-data", "test-quote.txt").trim()
    const parts = right(decodeQuoteString(quote))
    expect([parts.attest.length, parts.signature.length, parts.pcrBlob.length]).toEqual([93, 262, 668])
    const attest = right(parseAttest(parts.attest))
    expect(attest.type).toBe("quote")
    expect(hex(marshalAttest(attest))).toBe(hex(parts.attest))
    expect(hex(marshalSignature(right(parseSignature(parts.signature))))).toBe(hex(parts.signature))
    expect(hex(marshalPcrBlob(right(parsePcrBlob(parts.pcrBlob))))).toBe(hex(parts.pcrBlob))
    expect(encodeQuoteString(parts)).toBe(quote)
  })
})
