import { expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Either } from "effect"
import { makeRuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { imaKeyId, keyringFromPems, parseSigHeader, publicKeyFrom } from "../../src/ima/signatures.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { compile, makeLine, policyAllowing, tpmList, types } from "./helpers.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const rsaCert = () => readVectorText("tpm", "ima", "ima_cert.pem")
const ecCert = () => readVectorText("tpm", "ima", "ima_ec_cert.pem")
const wrongKey = () => readVectorText("keylime", "test", "data", "ima_keys", "rsa2048pub.pem")
const verificationKeys = (pems: Array<string>) => JSON.stringify({ meta: { version: 1 }, keyids: [], pubkeys: pems })

/** The tpm list's policy without the two signed files: they must pass by signature alone. */
const unsignedOnly = () => {
  const p = policyAllowing(tpmList())
  const digests = { ...p.digests } as Record<string, Array<string>>
  delete digests["/usr/local/bin/hello.sh"]
  // /etc/app/app.conf appears as ima-ng too (same digest); keep that entry by digest
  return { ...p, digests }
}

eachCryptoPort("ima-sig signatures (evmctl v2)", () => {
  it("computes the vector keyids from the keys", () => {
    expect(imaKeyId(publicKeyFrom(rsaCert())!)).toBe("7b8bf607")
    expect(imaKeyId(publicKeyFrom(ecCert())!)).toBe("18fb96bd")
  })
  it("parses the v2 header of the vector signature files", () => {
    const h = parseSigHeader(readVector("tpm", "ima", "files", "hello.sh.sig"))
    expect(h?.keyid).toBe("7b8bf607")
    expect(h?.hashAlg).toBe("sha256")
    expect(parseSigHeader(readVector("tpm", "ima", "files", "app.conf.sig"))?.keyid).toBe("18fb96bd")
  })
  it("verifies the RSA and ECDSA ima-sig entries with the policy's verification-keys", () => {
    const p = compile({ ...unsignedOnly(), "verification-keys": verificationKeys([rsaCert(), ecCert()]) })
    expect(verifyIma({ list: tpmList(), startEntry: 0, policy: p }).failures).toEqual([])
  })
  it("verifies with the tenant keyring (ima_sign_verification_keys)", () => {
    const keyring = Either.getOrThrow(keyringFromPems([rsaCert(), ecCert()]))
    expect(verifyIma({ list: tpmList(), startEntry: 0, policy: compile(unsignedOnly()), keyring }).failures).toEqual([])
  })
  it("falls back to the digests with a wrong key and fails for the file the policy lacks", () => {
    const p = compile({ ...unsignedOnly(), "verification-keys": verificationKeys([wrongKey()]) })
    const r = verifyIma({ list: tpmList(), startEntry: 0, policy: p })
    expect(types(r)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    expect(r.failures[0]!.context.path).toBe("/usr/local/bin/hello.sh")
  })
  it("reports ima.validator.ima-sig.invalid_signature when there is no policy and the key is wrong", () => {
    const sigLines = tpmList().split("\n").filter((l) => l.includes(" ima-sig ") && !l.endsWith(" "))
    const keyring = Either.getOrThrow(keyringFromPems([wrongKey()]))
    const r = verifyIma({ list: sigLines.join("\n"), startEntry: 0, keyring })
    expect(types(r)).toEqual(["ima.validator.ima-sig.invalid_signature", "ima.validator.ima-sig.invalid_signature"])
    const good = Either.getOrThrow(keyringFromPems([rsaCert(), ecCert()]))
    expect(verifyIma({ list: sigLines.join("\n"), startEntry: 0, keyring: good }).failures).toEqual([])
  })
  it("rejects a signature whose digest was changed (template hash recomputed)", () => {
    const line = tpmList().split("\n").find((l) => l.includes("/usr/local/bin/hello.sh"))!
    const [, , , , name, sig] = line.split(" ")
    const forged = makeLine("ima-sig", "sha256:" + "00".repeat(32), name!, sig!)
    const keyring = Either.getOrThrow(keyringFromPems([rsaCert()]))
    expect(types(verifyIma({ list: forged, startEntry: 0, keyring }))).toEqual(["ima.validator.ima-sig.invalid_signature"])
  })
})

eachCryptoPort("ima-buf keyrings", () => {
  const certDer = readVector("tpm", "ima", "ima_cert.der")
  const digest = crypto.createHash("sha256").update(certDer).digest("hex")
  const keyLine = makeLine("ima-buf", `sha256:${digest}`, ".ima", Buffer.from(certDer).toString("hex"))
  const signedLine = tpmList().split("\n").find((l) => l.includes("/usr/local/bin/hello.sh"))!

  it("learns a key from an ima-buf entry allowed by `keyrings` and verifies later signatures with it", () => {
    const p = compile(makeRuntimePolicy({ keyrings: { ".ima": [digest] } }))
    const r = verifyIma({ list: `${keyLine}\n${signedLine}\n`, startEntry: 0, policy: p })
    expect(r.failures).toEqual([])
    expect(r.state.learnedKeys.map((k) => k.keyring)).toEqual([".ima"])
    // the learned key is persisted and used in the next round
    const next = verifyIma({ list: `${signedLine}\n`, startEntry: 2, state: r.state, policy: p })
    expect(next.failures).toEqual([])
  })
  it("does not learn a key whose digest the policy does not list", () => {
    const p = compile(makeRuntimePolicy({ keyrings: { ".ima": ["00".repeat(32)] } }))
    const r = verifyIma({ list: `${keyLine}\n${signedLine}\n`, startEntry: 0, policy: p })
    expect(types(r)).toEqual(["ima.validation.ima-ng.runtime_policy_hash", "ima.validation.ima-ng.not_in_allowlist"])
  })
  it("skips keys of ignored keyrings without learning them", () => {
    const base = makeRuntimePolicy({})
    const p = compile({ ...base, ima: { ...base.ima, ignored_keyrings: [".ima"] } })
    const r = verifyIma({ list: `${keyLine}\n${signedLine}\n`, startEntry: 0, policy: p })
    expect(types(r)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    expect(r.failures[0]!.context.path).toBe("/usr/local/bin/hello.sh")
  })
  it("checks other buffers against `ima-buf`", () => {
    const buf = Buffer.from("root=/dev/sda1 ro").toString("hex")
    const d = crypto.createHash("sha256").update(Buffer.from(buf, "hex")).digest("hex")
    const line = makeLine("ima-buf", `sha256:${d}`, "kexec-cmdline", buf)
    const base = makeRuntimePolicy({})
    expect(types(verifyIma({ list: line, startEntry: 0, policy: compile(base) }))).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    expect(verifyIma({ list: line, startEntry: 0, policy: compile({ ...base, "ima-buf": { "kexec-cmdline": [d] } }) }).failures).toEqual([])
  })
})
