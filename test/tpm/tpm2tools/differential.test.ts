/**
 * Differential checks between attest's TypeScript TPM code and the reference tools, both ways:
 * simulator quotes through tpm2_checkquote, swtpm quotes through the TypeScript verifier,
 * tpm2_makecredential blobs activated by the simulator. (TypeScript MakeCredential blobs activated
 * by swtpm are a Tpm contract case, run on swtpm by test/tpm/contract/swtpm.test.ts.)
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, layer } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Layer } from "effect"
import { Tpm2Tools } from "../../../src/tpm/tpm2tools/Tpm2Tools.js"
import { parseAttest } from "../../../src/tpm/attest.js"
import { makeCredential, decodeCredentialFile } from "../../../src/tpm/credential.js"
import { marshalPcrBlob, parsePcrBlob, pcrBlobOf } from "../../../src/tpm/pcrBlob.js"
import { normalizeSelection } from "../../../src/tpm/pcrSelection.js"
import { parseTpm2bPublic } from "../../../src/tpm/public.js"
import { encodeQuoteString } from "../../../src/tpm/quoteString.js"
import { makeSimulator } from "../../../src/tpm/simulator/Simulator.js"
import { type PcrSelection, Tpm } from "../../../src/tpm/Tpm.js"
import { verifyQuoteString } from "../../../src/tpm/verifyQuote.js"
import { needsSwtpm } from "../../support/requirements.js"
import { SwtpmHarness } from "../../support/swtpm.js"
import { AK_MATRIX } from "../contract/contract.js"

const ok = needsSwtpm()

const ascii = (s: string) => new Uint8Array(Buffer.from(s, "ascii"))
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const scratch = () => mkdtempSync(join(tmpdir(), "attest-diff-"))

/** The sha256 RSA and ECC AKs of the contract matrix. */
const AKS = AK_MATRIX.slice(0, 2)
const SELECTION: PcrSelection = [{ hash: "sha1", pcrs: [0, 10, 16] }, { hash: "sha256", pcrs: [0, 1, 10, 16] }]

const Harness = SwtpmHarness.layer({ p256EkCert: true })
const OnSwtpm = Layer.unwrapEffect(Effect.map(SwtpmHarness, (s) => Tpm2Tools.layer({ tcti: s.tcti }))).pipe(
  Layer.provide(NodeContext.layer),
  Layer.provideMerge(Harness)
)

describe.skipIf(!ok)("differential: TypeScript vs tpm2-tools / swtpm", () => {
  layer(OnSwtpm, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    for (const { ek, options } of AKS) {
      it.effect(`tpm2_checkquote accepts a simulator quote (${options.alg} AK)`, () =>
        Effect.gen(function*() {
          const swtpm = yield* SwtpmHarness
          const sim = yield* makeSimulator({ seed: `checkquote ${options.alg}` })
          yield* sim.pcrExtend(16, [{ hash: "sha256", digest: new Uint8Array(32).fill(7) }])
          const ak = yield* sim.createAk(ek, options)
          const nonce = ascii("Ka8Qz2LmN4pR7tVx9Yb1")
          const q = yield* sim.quote(ak, { nonce, selection: SELECTION })
          const dir = scratch()
          try {
            writeFileSync(join(dir, "ak.pub"), ak.public)
            writeFileSync(join(dir, "q.attest"), q.attest)
            writeFileSync(join(dir, "q.sig"), q.signature)
            writeFileSync(join(dir, "q.pcrs"), marshalPcrBlob(pcrBlobOf(normalizeSelection(SELECTION), q.pcrs)))
            const args = ["-u", "ak.pub", "-m", "q.attest", "-s", "q.sig", "-f", "q.pcrs", "-g", "sha256", "-q", hex(nonce)]
            const out = yield* Effect.promise(() => swtpm.tool("tpm2_checkquote", args, dir))
            expect(out.toString()).toContain("pcrs:")
            // The same files with another nonce must be refused by the tool too.
            const refused = yield* Effect.promise(() =>
              swtpm.tool("tpm2_checkquote", [...args.slice(0, -1), hex(ascii("another-nonce-000000"))], dir).then(() => "accepted", () => "refused")
            )
            expect(refused).toBe("refused")
          } finally {
            rmSync(dir, { recursive: true, force: true })
          }
        }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))

      it.effect(`the TypeScript verifier accepts a swtpm quote as a Keylime quote string (${options.alg} AK)`, () =>
        Effect.gen(function*() {
          const tpm = yield* Tpm
          const ak = yield* tpm.createAk(ek, options)
          const nonce = ascii("hT3kW8nP0qZ5rS2vX6yA")
          const q = yield* tpm.quote(ak, { nonce, selection: SELECTION })
          const quote = encodeQuoteString({
            attest: q.attest,
            signature: q.signature,
            pcrBlob: marshalPcrBlob(pcrBlobOf(normalizeSelection(SELECTION), q.pcrs))
          })
          const verified = verifyQuoteString(ak.public, quote, nonce, { hashAlg: "sha256", scheme: options.scheme })
          expect(Either.isRight(verified) ? "verified" : verified.left).toBe("verified")
          if (Either.isRight(verified)) expect(verified.right.pcrs).toEqual(q.pcrs)
        }))

      it.effect(`the simulator activates a tpm2_makecredential -T none blob for its ${ek} EK`, () =>
        Effect.gen(function*() {
          const swtpm = yield* SwtpmHarness
          const sim = yield* makeSimulator({ seed: `makecredential ${ek}` })
          const ak = yield* sim.createAk(ek, options)
          const dir = scratch()
          try {
            const secret = new Uint8Array(randomBytes(32))
            writeFileSync(join(dir, "ek.pub"), yield* sim.ekPublic(ek))
            writeFileSync(join(dir, "secret.bin"), secret)
            yield* Effect.promise(() =>
              swtpm.tool("tpm2_makecredential", ["-T", "none", "-u", "ek.pub", "-s", "secret.bin", "-n", hex(ak.name), "-o", "cred.out"], dir)
            )
            const blob = Either.getOrThrow(decodeCredentialFile(new Uint8Array(readFileSync(join(dir, "cred.out")))))
            expect(yield* sim.activateCredential(ak, blob)).toEqual(secret)
          } finally {
            rmSync(dir, { recursive: true, force: true })
          }
        }).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))
    }

    it.effect("reads the swtpm EK certificates the harness provisioned (RSA at 0x1c00002, P-256 at 0x1c0000a)", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const swtpm = yield* SwtpmHarness
        for (const alg of ["rsa", "ecc"] as const) {
          const cert = yield* tpm.ekCertificate(alg)
          expect(cert._tag).toBe("Some")
        }
        expect(swtpm.rootCaPem).toContain("BEGIN CERTIFICATE")
      }))

    it.effect("keeps quoting after a TPM reset: the stale saved AK context is dropped and the AK reloaded", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const swtpm = yield* SwtpmHarness
        const ak = yield* tpm.createAk("rsa", AKS[0]!.options)
        const sel: PcrSelection = [{ hash: "sha256", pcrs: [16] }]
        const before = yield* tpm.quote(ak, { nonce: ascii("first"), selection: sel })
        yield* Effect.promise(() => swtpm.reset())
        const after = yield* tpm.quote(ak, { nonce: ascii("second"), selection: sel })
        const reset = (q: typeof before) => Either.getOrThrow(parseAttest(q.attest)).clockInfo.resetCount
        expect(reset(after)).toBe(reset(before) + 1)
        expect(yield* tpm.activateCredential(ak, Either.getOrThrow(makeCredential(
          Either.getOrThrow(parseTpm2bPublic(yield* tpm.ekPublic("rsa"))), ak.name, ascii("secret after reset")
        )))).toEqual(ascii("secret after reset"))
      }))

    it.effect("a quote taken through the layer parses to the tpm2-tools PCR file it came from", () =>
      Effect.gen(function*() {
        const tpm = yield* Tpm
        const ak = yield* tpm.createAk("ecc", AKS[1]!.options)
        const q = yield* tpm.quote(ak, { nonce: ascii("Ec7Gj1Lm4Np9Qs3Tu6Wx"), selection: SELECTION })
        const blob = marshalPcrBlob(pcrBlobOf(normalizeSelection(SELECTION), q.pcrs))
        expect(Either.getOrThrow(parsePcrBlob(blob)).values).toEqual(q.pcrs)
      }))
  })
})
