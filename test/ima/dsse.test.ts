import { expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Either } from "effect"
import { decodeRuntimePolicyJson } from "../../schemas/RuntimePolicy.js"
import { decodeDsseEnvelopeJson, dsseKeyId, pae, verificationKeyFrom, verifyDetached, verifyEnvelope } from "../../src/ima/dsse.js"
import { signEnvelope } from "../../src/ima/dsseSign.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const data = (name: string) => readVectorText("keylime", "test", "data", name)
const pubkey = () => verificationKeyFrom(data("runtime-policy-pubkey.pub"))!

eachCryptoPort("DSSE-signed runtime policies", () => {
  it("encodes PAE as the DSSE spec gives it", () => {
    expect(Buffer.from(pae("http://example.com/HelloWorld", Buffer.from("hello world"))).toString()).toBe(
      "DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
  })
  it("verifies Keylime's signed policy with its ECDSA key and yields the plain policy", () => {
    const env = Either.getOrThrow(decodeDsseEnvelopeJson(data("runtime-policy-test-signed.json")))
    const payload = Either.getOrThrow(verifyEnvelope(env, pubkey()))
    expect(Buffer.from(payload).toString().trim()).toBe(data("runtime-policy-test.json").trim())
    expect(Either.isRight(decodeRuntimePolicyJson(Buffer.from(payload).toString()))).toBe(true)
    expect(env.signatures[0]!.keyid).toBe(dsseKeyId(pubkey()))
  })
  it("rejects the -bad signed policy", () => {
    const env = Either.getOrThrow(decodeDsseEnvelopeJson(data("runtime-policy-test-signed-bad.json")))
    const r = verifyEnvelope(env, pubkey())
    expect(Either.isLeft(r) && r.left._tag === "DsseError").toBe(true)
  })
  it("rejects the signed policy with another key", () => {
    const env = Either.getOrThrow(decodeDsseEnvelopeJson(data("runtime-policy-test-signed.json")))
    const other = verificationKeyFrom(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-public.pem"))!
    expect(Either.isLeft(verifyEnvelope(env, other))).toBe(true)
  })
  it("signs with the P-521 test key and verifies with its public key and not after a payload change", () => {
    const priv = crypto.createPrivateKey(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-private.pem"))
    const policy = readVector("keylime", "test", "data", "sign-runtime-policy", "runtime-policy.json")
    const env = Either.getOrThrow(signEnvelope(policy, priv))
    const pub = verificationKeyFrom(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-public.pem"))!
    expect(Buffer.from(Either.getOrThrow(verifyEnvelope(env, pub)))).toEqual(Buffer.from(policy))
    const tampered = { ...env, payload: Buffer.from(Buffer.from(policy).toString().replace("foobar", "foobaz")).toString("base64") }
    expect(Either.isLeft(verifyEnvelope(tampered, pub))).toBe(true)
  })
  it("verifies with an x509 certificate of the signing key", () => {
    const priv = crypto.createPrivateKey(readVectorText("rust-keylime", "keylime", "test-data", "prime256v1.pem"))
    const env = Either.getOrThrow(signEnvelope(Buffer.from("{}"), priv))
    const cert = verificationKeyFrom(readVectorText("rust-keylime", "keylime", "test-data", "prime256v1.cert.pem"))!
    expect(Either.isRight(verifyEnvelope(env, cert))).toBe(true)
  })
  it("checks Keylime's detached runtime_policy_sig with runtime_policy_key", () => {
    const priv = crypto.createPrivateKey(readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-private.pem"))
    const policy = readVector("keylime", "test", "data", "sign-runtime-policy", "runtime-policy.json")
    const sig = crypto.sign("sha256", policy, priv)
    const key = readVectorText("keylime", "test", "data", "sign-runtime-policy", "ec-p521-public.pem")
    expect(Either.isRight(verifyDetached(policy, sig, key))).toBe(true)
    expect(Either.isLeft(verifyDetached(Buffer.concat([policy, Buffer.from(" ")]), sig, key))).toBe(true)
    expect(Either.isLeft(verifyDetached(policy, sig, "not a key"))).toBe(true)
  })
})
