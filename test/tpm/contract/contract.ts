/**
 * The Tpm contract: the same behaviour asked of every layer (simulator, tpm2-tools on swtpm).
 * Everything a layer returns is checked with the pure core (verifyQuote, verifyCertify,
 * makeCredential), never with the layer itself.
 */
import { expect, layer } from "@effect/vitest"
import { createHash, randomBytes } from "node:crypto"
import { Context, Effect, Either, type Layer, Option, type Scope } from "effect"
import { makeCredential } from "../../../src/tpm/credential.js"
import { pcrBlobOf } from "../../../src/tpm/pcrBlob.js"
import { normalizeSelection } from "../../../src/tpm/pcrSelection.js"
import { keyObjectOf } from "../../../src/tpm/nodeKeys.js"
import { nameOf, parseTpm2bPublic } from "../../../src/tpm/public.js"
import { EK_ATTRIBUTES, EK_AUTH_POLICY } from "../../../src/tpm/templates.js"
import { type AkOptions, type HashAlg, type KeyAlg, type PcrSelection, Tpm, type TpmShape } from "../../../src/tpm/Tpm.js"
import { verifyCertify } from "../../../src/tpm/verifyCertify.js"
import { verifyQuote } from "../../../src/tpm/verifyQuote.js"
import { X509Certificate } from "node:crypto"

/** Opens another instance of the same TPM (same seed/state, or same TCTI), for persistence tests. */
export class ReopenTpm extends Context.Tag("attest/test/ReopenTpm")<
  ReopenTpm,
  Effect.Effect<TpmShape, unknown, Scope.Scope>
>() {}

const ascii = (s: string) => new Uint8Array(Buffer.from(s, "ascii"))
const nonceOf = () => ascii(randomBytes(15).toString("base64").replace(/[+/=]/g, "x").slice(0, 20))

export const AK_MATRIX: ReadonlyArray<{ readonly ek: KeyAlg; readonly options: AkOptions }> = [
  { ek: "rsa", options: { alg: "rsa", hash: "sha256", scheme: "rsassa" } },
  { ek: "ecc", options: { alg: "ecc", hash: "sha256", scheme: "ecdsa" } },
  { ek: "rsa", options: { alg: "rsa", bits: 2048, hash: "sha384", scheme: "rsapss" } },
  { ek: "ecc", options: { alg: "ecc", bits: 384, hash: "sha384", scheme: "ecdsa" } }
]

const describeAk = (o: AkOptions) => `${o.alg}${o.bits ?? (o.alg === "rsa" ? 2048 : 256)}/${o.scheme}/${o.hash}`

const SELECTION: PcrSelection = [
  { hash: "sha1", pcrs: [16, 0] },
  { hash: "sha256", pcrs: [0, 10, 16] }
]

const extendDigests = (label: string) =>
  (["sha1", "sha256"] as const).map((hash) => ({ hash, digest: new Uint8Array(createHash(hash).update(label).digest()) }))

const verifyWith = (tpmQuote: { attest: Uint8Array; signature: Uint8Array; pcrs: ReadonlyArray<unknown> }, akPublic: Uint8Array, selection: PcrSelection, nonce: Uint8Array, pcrs: Parameters<typeof pcrBlobOf>[1]) =>
  verifyQuote({ akPublic, attest: tpmQuote.attest, signature: tpmQuote.signature, pcrs: pcrBlobOf(normalizeSelection(selection), pcrs), nonce })

export const tpmContract = (name: string, tpmLayer: Layer.Layer<Tpm | ReopenTpm, unknown>) =>
  layer(tpmLayer, { timeout: "120 seconds", excludeTestServices: true })(name, (it) => {
    it.effect("gives standard EK templates and EK certificates that hold the EK key", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        for (const alg of ["rsa", "ecc"] as const) {
          const pub = Either.getOrThrow(parseTpm2bPublic(yield* tpm.ekPublic(alg)))
          expect(pub.type).toBe(alg)
          expect(pub.attributes).toBe(EK_ATTRIBUTES)
          expect(Buffer.from(pub.authPolicy).toString("hex")).toBe(Buffer.from(EK_AUTH_POLICY).toString("hex"))
          if (pub.type === "ecc") expect(pub.curveId).toBe(0x0003)
          const cert = yield* tpm.ekCertificate(alg)
          expect(Option.isSome(cert)).toBe(true)
          const x509 = new X509Certificate(Option.getOrThrow(cert))
          const ekKey = Either.getOrThrow(keyObjectOf(pub))
          expect(x509.publicKey.export({ format: "der", type: "spki" })).toEqual(ekKey.export({ format: "der", type: "spki" }))
        }
      }))

    for (const { ek, options } of AK_MATRIX) {
      it.effect(`takes a quote with a ${describeAk(options)} AK that the core verifier accepts, and not for another nonce`, () =>
        Effect.gen(function*() {
          const tpm = yield* Tpm
          yield* tpm.pcrExtend(16, extendDigests(`quote ${describeAk(options)}`))
          const ak = yield* tpm.createAk(ek, options)
          expect(ak.name).toEqual(nameOf(Either.getOrThrow(parseTpm2bPublic(ak.public))))
          const nonce = nonceOf()
          const q = yield* tpm.quote(ak, { nonce, selection: SELECTION })
          const now = yield* tpm.pcrRead(SELECTION)
          expect(q.pcrs).toEqual(now)
          const ok = verifyWith(q, ak.public, SELECTION, nonce, q.pcrs)
          expect(Either.isRight(ok) ? "verified" : ok.left).toBe("verified")
          if (Either.isRight(ok)) {
            expect(ok.right.signature.alg).toBe(options.scheme)
            expect(ok.right.signature.hash).toBe(options.hash)
          }
          const wrong = verifyWith(q, ak.public, SELECTION, nonceOf(), q.pcrs)
          expect(Either.isLeft(wrong) && wrong.left.check).toBe("nonce")
        }))
    }

    for (const { ek, options } of AK_MATRIX.slice(0, 2)) {
      it.effect(`certifies a ${options.alg} AK over a nonce (push-model proof of possession)`, () =>
        Effect.gen(function*() {
          const tpm = yield* Tpm
          const ak = yield* tpm.createAk(ek, options)
          const nonce = nonceOf()
          const c = yield* tpm.certify(ak, nonce)
          const ok = verifyCertify({ objectPublic: ak.public, attest: c.attest, signature: c.signature, nonce, hashAlg: options.hash, scheme: options.scheme })
          expect(Either.isRight(ok) ? "verified" : ok.left).toBe("verified")
          if (Either.isRight(ok)) expect(ok.right.attest.attested.name).toEqual(ak.name)
          const wrong = verifyCertify({ objectPublic: ak.public, attest: c.attest, signature: c.signature, nonce: nonceOf() })
          expect(Either.isLeft(wrong) && wrong.left.check).toBe("nonce")
        }))

      it.effect(`activates a credential made in TypeScript for its ${ek} EK and AK, and refuses one bound to another AK`, () =>
        Effect.gen(function*() {
          const tpm = yield* Tpm
          const ak = yield* tpm.createAk(ek, options)
          const ekPub = Either.getOrThrow(parseTpm2bPublic(yield* tpm.ekPublic(ek)))
          const secret = new Uint8Array(randomBytes(32))
          const blob = Either.getOrThrow(makeCredential(ekPub, ak.name, secret))
          expect(yield* tpm.activateCredential(ak, blob)).toEqual(secret)
          const other = new Uint8Array(ak.name)
          other[5] = other[5]! ^ 0xff
          const foreign = Either.getOrThrow(makeCredential(ekPub, other, secret))
          const refused = yield* Effect.either(tpm.activateCredential(ak, foreign))
          expect(Either.isLeft(refused) && refused.left._tag).toBe("TpmError")
        }))
    }

    it.effect("extends PCRs per bank and reads back H(old ‖ digest)", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const sel: PcrSelection = [{ hash: "sha1", pcrs: [23] }, { hash: "sha256", pcrs: [23] }]
        const before = yield* tpm.pcrRead(sel)
        const digests = extendDigests("extend test")
        yield* tpm.pcrExtend(23, digests)
        const after = yield* tpm.pcrRead(sel)
        for (const [i, hash] of (["sha1", "sha256"] as Array<HashAlg>).entries()) {
          const expected = createHash(hash).update(before[i]!.values.get(23)!).update(digests[i]!.digest).digest()
          expect(after[i]!.hash).toBe(hash)
          expect(Buffer.from(after[i]!.values.get(23)!)).toEqual(expected)
        }
        // A bank left out is not extended.
        yield* tpm.pcrExtend(23, [digests[1]!])
        const third = yield* tpm.pcrRead(sel)
        expect(third[0]!.values.get(23)).toEqual(after[0]!.values.get(23))
        expect(third[1]!.values.get(23)).not.toEqual(after[1]!.values.get(23))
        const bad = yield* Effect.either(tpm.pcrExtend(24, digests))
        expect(Either.isLeft(bad)).toBe(true)
      }))

    it.effect("resets PCR 16 to zeros in every bank, and refuses to reset PCR 0", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const sel: PcrSelection = [{ hash: "sha1", pcrs: [16] }, { hash: "sha256", pcrs: [16] }]
        yield* tpm.pcrExtend(16, extendDigests("before reset"))
        const extended = yield* tpm.pcrRead(sel)
        for (const bank of extended) expect(bank.values.get(16)!.some((b) => b !== 0)).toBe(true)
        yield* tpm.pcrReset(16)
        const reset = yield* tpm.pcrRead(sel)
        expect(reset.map((b) => [b.hash, Buffer.from(b.values.get(16)!).toString("hex")])).toEqual([
          ["sha1", "00".repeat(20)],
          ["sha256", "00".repeat(32)]
        ])
        const pcr0 = (yield* tpm.pcrRead([{ hash: "sha256", pcrs: [0] }]))[0]!.values.get(0)
        const refused = yield* Effect.either(tpm.pcrReset(0))
        expect(Either.isLeft(refused) && refused.left._tag).toBe("TpmError")
        if (Either.isLeft(refused)) expect(refused.left.message).toMatch(/PCR 0 .*not resettable/)
        // A refused reset leaves the PCR as it was.
        expect((yield* tpm.pcrRead([{ hash: "sha256", pcrs: [0] }]))[0]!.values.get(0)).toEqual(pcr0)
      }))

    it.scoped("reloads a saved AK in a new instance: same name, and its quotes verify with the saved public", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const ak = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
        const saved = structuredClone(ak.saved)
        const reopened = yield* (yield* ReopenTpm)
        const again = yield* reopened.loadAk(saved)
        expect(again.name).toEqual(ak.name)
        const nonce = nonceOf()
        const sel: PcrSelection = [{ hash: "sha256", pcrs: [0, 16] }]
        const q = yield* reopened.quote(again, { nonce, selection: sel })
        const ok = verifyWith(q, saved.public, sel, nonce, q.pcrs)
        expect(Either.isRight(ok) ? "verified" : ok.left).toBe("verified")
        const damaged = { ...saved, private: saved.private.map((b, i) => (i === 40 ? b ^ 1 : b)) }
        const refused = yield* Effect.either(reopened.loadAk(damaged))
        expect(Either.isLeft(refused) && refused.left._tag).toBe("TpmError")
      }))

    it.effect("returns the random bytes asked for", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const a = yield* tpm.getRandom(48)
        const b = yield* tpm.getRandom(48)
        expect(a.length).toBe(48)
        expect(a).not.toEqual(b)
        expect((yield* tpm.getRandom(0)).length).toBe(0)
      }))
  })
