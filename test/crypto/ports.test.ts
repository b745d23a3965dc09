/**
 * The two crypto ports (src/crypto: node:crypto, and @noble/hashes + @noble/curves + WebCrypto)
 * give the same answers on random input: digests, HMAC and encodings; signature checks of genuine
 * and mutated signatures; keys read from every encoding and from garbage; and, one level up, the
 * verdicts of the engines (quotes, IMA lists, measured-boot logs, SEV-SNP reports, EARs) on random
 * evidence and random mutations of it.
 */
import { describe, expect, it } from "@effect/vitest"
import { p256, p384 } from "@noble/curves/nist.js"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { Effect, Either, FastCheck as fc } from "effect"
import * as crypto from "node:crypto"
import { cryptoPort, settleSignatures, useCrypto } from "../../src/crypto/active.js"
import {
  portableFromBase64,
  portableFromHex,
  portableFromLatin1,
  portableLatin1,
  portableToBase64,
  portableToBase64Url,
  portableToHex
} from "../../src/crypto/encoding.js"
import { nodeCryptoPort } from "../../src/crypto/node.js"
import { type CryptoPort, type HashAlg, type PublicKey, sameKey, type SignatureScheme } from "../../src/crypto/port.js"
import { portableCryptoPort } from "../../src/crypto/portable.js"
import { parseEventLog } from "../../src/boot/eventLog.js"
import { replayPcrs } from "../../src/boot/replay.js"
import { generateEarKey, signEar, verificationKeyOf, verifyEar } from "../../src/ear/index.js"
import { encodeImaNg } from "../../src/ima/encode.js"
import { verifyIma } from "../../src/ima/verify.js"
import { verifySnpEvidence } from "../../src/tee/snp/verify.js"
import { marshalTpm2bPublic } from "../../src/tpm/public.js"
import { parsePcrBlob } from "../../src/tpm/pcrBlob.js"
import { verifyQuote } from "../../src/tpm/verifyQuote.js"
import { gceLog } from "../boot/support.js"
import { compile, policyAllowing } from "../ima/helpers.js"
import { milanReport, milanVcek } from "../tee/support.js"
import { makeAk, makeQuote } from "../tpm/quoteFixture.js"
import { readVectorText } from "../support/vectors.js"

const node = nodeCryptoPort()!
const portable = portableCryptoPort()

/** `f` with `port` in use and its signature checks answered. */
const under = async <A>(port: CryptoPort, f: () => A): Promise<A> => {
  const previous = useCrypto(port)
  try {
    return await settleSignatures(f)
  } finally {
    useCrypto(previous)
  }
}

/** `f`, asynchronous, with `port` in use until it is done. */
const underAsync = async <A>(port: CryptoPort, f: () => Promise<A>): Promise<A> => {
  const previous = useCrypto(port)
  try {
    return await f()
  } finally {
    useCrypto(previous)
  }
}

/** What `f` answers with each port, seen through `view`. */
const both = async <A, B>(f: () => A, view: (a: A) => B): Promise<readonly [B, B]> => [view(await under(node, f)), view(await under(portable, f))]

const flip = (b: Uint8Array, at: number, mask: number): Uint8Array => {
  const out = new Uint8Array(b)
  if (out.length > 0) out[at % out.length]! ^= mask
  return out
}

const NOBLE = { "P-256": p256, "P-384": p384, secp256k1 } as const
const privateScalar = (k: crypto.KeyObject): Uint8Array => new Uint8Array(Buffer.from(k.export({ format: "jwk" }).d!, "base64url"))

const hashArb = fc.constantFrom<HashAlg>("sha1", "sha256", "sha384", "sha512")
const maskArb = fc.integer({ min: 1, max: 255 })

describe("the crypto ports agree", () => {
  it("on digests, incremental hashing and HMAC of random input", () => {
    fc.assert(
      fc.property(hashArb, fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 4 }), fc.uint8Array({ maxLength: 200 }), (alg, parts, key) => {
        const whole = Buffer.concat(parts)
        const h = (p: CryptoPort) => {
          const hasher = p.hasher(alg)
          for (const part of parts) hasher.update(part)
          return [Buffer.from(p.digest(alg, whole)).toString("hex"), Buffer.from(hasher.digest()).toString("hex"), p.digestLatin1(alg, whole), Buffer.from(p.hmac(alg, key, ...parts)).toString("hex")]
        }
        expect(h(portable)).toEqual(h(node))
        expect(h(node)[0]).toBe(crypto.createHash(alg).update(whole).digest("hex"))
      }),
      { numRuns: 200 }
    )
  })

  it("on encodings: the portable codecs decode and encode exactly as Buffer does, garbage included", () => {
    const text = fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^[0-9a-fA-Fxz ]{0,40}$/), fc.stringMatching(/^[A-Za-z0-9+/=_\- \n]{0,60}$/))
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), text, (bytes, s) => {
        const b = Buffer.from(bytes)
        expect([portableToHex(bytes), portableToBase64(bytes), portableToBase64Url(bytes), portableLatin1(bytes)]).toEqual([b.toString("hex"), b.toString("base64"), b.toString("base64url"), b.toString("latin1")])
        expect([portableFromHex(s), portableFromBase64(s), portableFromLatin1(s)].map((x) => Buffer.from(x).toString("hex")))
          .toEqual([Buffer.from(s, "hex"), Buffer.from(s, "base64"), Buffer.from(s, "latin1")].map((x) => x.toString("hex")))
      }),
      { numRuns: 500 }
    )
  })

  const signers = [
    { name: "rsa-2048", kp: crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }) },
    { name: "rsa-3072", kp: crypto.generateKeyPairSync("rsa", { modulusLength: 3072 }) },
    { name: "P-256", kp: crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }) },
    { name: "P-384", kp: crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }) },
    { name: "P-521", kp: crypto.generateKeyPairSync("ec", { namedCurve: "P-521" }) },
    { name: "secp256k1", kp: crypto.generateKeyPairSync("ec", { namedCurve: "secp256k1" }) }
  ]
  const spki = (k: crypto.KeyObject) => new Uint8Array(k.export({ format: "der", type: "spki" }))

  it("on signatures: both accept what node signed and refuse the same mutations", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...signers), hashArb, fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 3 }), fc.nat(), maskArb, fc.integer({ min: 0, max: 64 }), fc.boolean(),
        async (signer, hash, message, mutation, at, mask, salt, p1363) => {
          const rsa = signer.name.startsWith("rsa")
          const pss = rsa && salt % 2 === 1
          const signature = new Uint8Array(crypto.sign(hash, message, rsa
            ? { key: signer.kp.privateKey, ...(pss ? { padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: salt } : {}) }
            : { key: signer.kp.privateKey, dsaEncoding: p1363 ? "ieee-p1363" : "der" }))
          const scheme: SignatureScheme = rsa
            ? pss ? { alg: "rsa-pss", hash, saltLength: at % 3 === 0 ? salt : "any" } : { alg: "rsa-pkcs1", hash }
            : { alg: "ecdsa", hash, encoding: p1363 ? "p1363" : "der" }
          const [m, s] = mutation === 1 ? [flip(message, at, mask), signature] : mutation === 2 ? [message, flip(signature, at, mask)] : mutation === 3 ? [message, signature.subarray(0, at % (signature.length + 1))] : [message, signature]
          const der = spki(signer.kp.publicKey)
          const verdicts = await both(() => {
            const key = cryptoPort().publicKeyFrom(der)!
            return cryptoPort().verify(key, scheme, m, s)
          }, (v) => v)
          expect(verdicts[1]).toBe(verdicts[0])
          if (mutation === 0) expect(verdicts[0]).toBe(true)
        }
      ),
      { numRuns: 80 }
    )
  })

  it("on signatures over a digest the caller has (IMA file signatures): RSA PKCS#1 v1.5 DigestInfo and DER ECDSA", async () => {
    const prefix = Buffer.from("3031300d060960864801650304020105000420", "hex")
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...signers.filter((s) => s.name !== "P-521")), fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.integer({ min: 0, max: 2 }), fc.nat(), maskArb, async (signer, digest, mutation, at, mask) => {
        const rsa = signer.name.startsWith("rsa")
        const digestInfo = new Uint8Array(Buffer.concat([prefix, digest]))
        const signature = rsa
          ? new Uint8Array(crypto.privateEncrypt({ key: signer.kp.privateKey, padding: crypto.constants.RSA_PKCS1_PADDING }, digestInfo))
          // node signs only what it hashes itself: noble signs the digest as IMA's signer does
          : NOBLE[signer.name as keyof typeof NOBLE].sign(digest, privateScalar(signer.kp.privateKey), { prehash: false, format: "der" })
        const [d, s] = mutation === 1 ? [flip(digest, at, mask), signature] : mutation === 2 ? [digest, flip(signature, at, mask)] : [digest, signature]
        const der = spki(signer.kp.publicKey)
        const verdicts = await both(() => {
          const key = cryptoPort().publicKeyFrom(der)!
          return rsa ? cryptoPort().verifyRsaDigestInfo(key, new Uint8Array(Buffer.concat([prefix, d])), s) : cryptoPort().verifyEcdsaDigest(key, d, s)
        }, (v) => v)
        expect(verdicts[1]).toBe(verdicts[0])
        if (mutation === 0) expect(verdicts[0]).toBe(true)
      }),
      { numRuns: 60 }
    )
  })

  it("on keys: the key node reads from SPKI, PKCS#1 and certificates in DER and PEM; none in random bytes; the same answer for mutated ones", async () => {
    const certs = ["ima_cert.pem", "ima_ec_cert.pem"].map((f) => readVectorText("tpm", "ima", f))
    const encodings = (k: crypto.KeyObject): ReadonlyArray<Uint8Array | string> => [
      spki(k),
      k.export({ format: "pem", type: "spki" }).toString(),
      ...(k.asymmetricKeyType === "rsa" ? [new Uint8Array(k.export({ format: "der", type: "pkcs1" })), k.export({ format: "pem", type: "pkcs1" }).toString()] : [])
    ]
    // each input with the key node reads from it (the oracle for well-formed input)
    const inputs: ReadonlyArray<{ readonly data: Uint8Array | string; readonly key: crypto.KeyObject }> = [
      ...signers.flatMap((s) => encodings(s.kp.publicKey).map((data) => ({ data, key: s.kp.publicKey }))),
      ...certs.flatMap((c) => [c, new Uint8Array(new crypto.X509Certificate(c).raw)].map((data) => ({ data, key: new crypto.X509Certificate(c).publicKey })))
    ]
    const view = (k: PublicKey | undefined) => (k === undefined ? "none" : k.type === "other" ? `other ${k.kind}` : k)
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...inputs), fc.integer({ min: 0, max: 2 }), fc.nat(), maskArb, fc.uint8Array({ maxLength: 120 }), async (input, mutation, at, mask, random) => {
        const data = mutation === 0 ? input.data : mutation === 2 ? random : typeof input.data === "string" ? input.data : flip(input.data, at, mask)
        const [a, b] = await both(() => cryptoPort().publicKeyFrom(data), view)
        if (typeof a === "string" || typeof b === "string") expect(b).toEqual(a)
        else expect(sameKey(a, b)).toBe(true)
        if (mutation === 0) {
          const oracle = cryptoPort().publicKeyFrom(spki(input.key))
          expect(oracle !== undefined && typeof a !== "string" && sameKey(a, oracle)).toBe(true)
        }
        if (mutation === 2) expect(a).toBe("none")
      }),
      { numRuns: 300 }
    )
  })
})

describe("the engines give the same verdict with either port", () => {
  const aks = [makeAk("rsa"), makeAk("rsa", "rsapss"), makeAk("ecc"), makeAk("ecc", "ecdsa", "sha384", 384)]

  it("on quotes and their mutations (attest, signature, PCR blob, nonce)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...aks), fc.integer({ min: 0, max: 4 }), fc.nat(), maskArb, async (ak, mutation, at, mask) => {
        const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 7, 10, 16] }])
        const attest = mutation === 1 ? flip(q.attest, at, mask) : q.attest
        const signature = mutation === 2 ? flip(q.signature, at, mask) : q.signature
        const blob = parsePcrBlob(mutation === 3 ? flip(q.pcrBlob, at, mask) : q.pcrBlob)
        const nonce = mutation === 4 ? flip(q.nonce, at, mask) : q.nonce
        if (Either.isLeft(blob)) return
        const akPublic = marshalTpm2bPublic(ak.public)
        const verdicts = await both(() => verifyQuote({ akPublic, attest, signature, pcrs: blob.right, nonce }), (r) => (Either.isRight(r) ? "verified" : r.left.check))
        expect(verdicts[1]).toBe(verdicts[0])
        if (mutation === 0) expect(verdicts[0]).toBe("verified")
      }),
      { numRuns: 60 }
    )
  })

  it("on IMA lists and random character flips", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.stringMatching(/^\/[a-z0-9/._-]{1,30}$/), { minLength: 1, maxLength: 12 }), fc.nat(), fc.nat(), async (paths, at, c) => {
        const lines = paths.map((p) => encodeImaNg(new Uint8Array(crypto.createHash("sha256").update(p).digest()), p, { banks: ["sha256"] }).line)
        const list = lines.join("\n") + "\n"
        const policy = compile(policyAllowing(list))
        const i = at % list.length
        const changed = list.slice(0, i) + "0123456789abcdef /x"[c % 19] + list.slice(i + 1)
        const verdicts = await both(() => verifyIma({ list: changed, startEntry: 0, policy, banks: ["sha256", "sha1"] }), (r) => ({ types: r.failures.map((f) => f.type), pcrs: r.pcrs, entries: r.entries }))
        expect(verdicts[1]).toEqual(verdicts[0])
      }),
      { numRuns: 60 }
    )
  })

  it("on a measured-boot log with random byte flips: the same parse failure or the same replayed PCRs", async () => {
    const log = gceLog()
    await fc.assert(
      fc.asyncProperty(fc.nat(), maskArb, async (at, mask) => {
        const bytes = flip(log, at, mask)
        const verdicts = await both(() => parseEventLog(bytes), (r) =>
          Either.isLeft(r) ? r.left.message : replayPcrs(r.right).map((b) => [b.hash, [...b.values].map(([p, v]) => `${p}:${Buffer.from(v).toString("hex")}`)]))
        expect(verdicts[1]).toEqual(verdicts[0])
      }),
      { numRuns: 60 }
    )
  })

  it("on the real SEV-SNP report and VCEK with random bit flips", async () => {
    const report = milanReport()
    const vcek = milanVcek()
    const now = new Date("2026-11-21T00:00:00Z")
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.nat(), async (inVcek, bit) => {
        const r = inVcek ? report : flip(report, bit >> 3, 1 << (bit & 7))
        const v = inVcek ? flip(vcek, bit >> 3, 1 << (bit & 7)) : vcek
        const verdicts = await both(() => verifySnpEvidence({ report: r, vcek: Buffer.from(v).toString("base64"), freshness: undefined, policy: undefined }, { now }), (x) => x.failures.map((f) => f.type))
        expect(verdicts[1]).toEqual(verdicts[0])
      }),
      { numRuns: 60 }
    )
  })

  it("on EARs with random character flips", async () => {
    const key = generateEarKey()
    const keys = [verificationKeyOf(key)]
    const token = Either.getOrThrow(signEar({ agentId: "a", failures: [], appraised: { quote: true } }, key, { build: "attest test" }, 1_700_000_000))
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), async (at, c) => {
        const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
        const i = at % token.length
        const changed = token.slice(0, i) + alphabet[c % alphabet.length] + token.slice(i + 1)
        const check = () => Effect.runPromise(Effect.either(verifyEar(changed, keys))).then((r) => (Either.isRight(r) ? "verified" : r.left.reason))
        const views = [await underAsync(node, check), await underAsync(portable, check)]
        expect(views[1]).toBe(views[0])
        if (changed === token) expect(views[0]).toBe("verified")
      }),
      { numRuns: 60 }
    )
  })
})
