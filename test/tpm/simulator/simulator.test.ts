/** What only the simulator promises: determinism, a persistent identity, and its manufacturer CA. */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { X509Certificate } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, FastCheck as fc, Option } from "effect"
import { parseAttest } from "../../../src/tpm/attest.js"
import { keyObjectOf } from "../../../src/tpm/nodeKeys.js"
import { parseTpm2bPublic } from "../../../src/tpm/public.js"
import { unsealAk } from "../../../src/tpm/simulator/akBlob.js"
import { normalizeSeed } from "../../../src/tpm/simulator/identity.js"
import { simulatorManufacturerCa } from "../../../src/tpm/simulator/manufacturer.js"
import { makeSimulator, type TpmSimulatorOptions } from "../../../src/tpm/simulator/Simulator.js"
import type { AkOptions } from "../../../src/tpm/Tpm.js"

const RSA: AkOptions = { alg: "rsa", hash: "sha256", scheme: "rsassa" }
const ECC: AkOptions = { alg: "ecc", hash: "sha256", scheme: "ecdsa" }
const open = (options: TpmSimulatorOptions) => makeSimulator(options).pipe(Effect.provide(NodeFileSystem.layer))
const nonce = new Uint8Array(Buffer.from("d9F2h5K8m1P4r7T0v3Y6"))
const sel = [{ hash: "sha256" as const, pcrs: [0, 16] }]

describe("TpmSimulator", () => {
  it.scoped("is deterministic with a seed: same EKs, EK certificates, AKs and RSA quotes", () =>
    Effect.gen(function*() {
      const a = yield* open({ seed: "determinism" })
      const b = yield* open({ seed: "determinism" })
      for (const alg of ["rsa", "ecc"] as const) {
        expect(yield* a.ekPublic(alg)).toEqual(yield* b.ekPublic(alg))
        expect(yield* a.ekCertificate(alg)).toEqual(yield* b.ekCertificate(alg))
      }
      const akA = yield* a.createAk("rsa", RSA)
      const akB = yield* b.createAk("rsa", RSA)
      expect(akA.saved).toEqual(akB.saved)
      // TestClock: the clock is the same, so the attest and the RSASSA signature are byte-identical.
      expect(yield* a.quote(akA, { nonce, selection: sel })).toEqual(yield* b.quote(akB, { nonce, selection: sel }))
      expect(yield* a.getRandom(16)).toEqual(yield* b.getRandom(16))
      const other = yield* open({ seed: "another seed" })
      expect(yield* other.ekPublic("rsa")).not.toEqual(yield* a.ekPublic("rsa"))
      // A second AK is a different key.
      expect((yield* a.createAk("rsa", RSA)).name).not.toEqual(akA.name)
    }))

  it.scoped("issues EK certificates that chain to the exported manufacturer CA and hold the EK key", () =>
    Effect.gen(function*() {
      const tpm = yield* open({ seed: "ek certificates" })
      const ca = new X509Certificate(simulatorManufacturerCa().pem)
      expect(ca.ca).toBe(true)
      for (const alg of ["rsa", "ecc"] as const) {
        const cert = new X509Certificate(Option.getOrThrow(yield* tpm.ekCertificate(alg)))
        expect(cert.verify(ca.publicKey)).toBe(true)
        expect(cert.checkIssued(ca)).toBe(true)
        const ek = Either.getOrThrow(keyObjectOf(Either.getOrThrow(parseTpm2bPublic(yield* tpm.ekPublic(alg)))))
        expect(cert.publicKey.export({ format: "der", type: "spki" })).toEqual(ek.export({ format: "der", type: "spki" }))
        expect(cert.keyUsage).toContain("2.23.133.8.1")
        expect(cert.subjectAltName).toContain("2.23.133.2.1")
        expect(cert.ca).toBe(false)
      }
    }))

  it.scoped("keeps its identity across restarts through the state file (mode 0600), as a TPM reset", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-sim-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const stateFile = join(dir, "tpm.json")
      const first = yield* Effect.scoped(
        Effect.gen(function*() {
          const tpm = yield* open({ stateFile })
          const ak = yield* tpm.createAk("ecc", ECC)
          return { ek: yield* tpm.ekPublic("ecc"), cert: yield* tpm.ekCertificate("rsa"), ak }
        })
      )
      expect(statSync(stateFile).mode & 0o777).toBe(0o600)
      const tpm = yield* open({ stateFile })
      expect(yield* tpm.ekPublic("ecc")).toEqual(first.ek)
      expect(yield* tpm.ekCertificate("rsa")).toEqual(first.cert)
      const ak = yield* tpm.loadAk(first.ak.saved)
      expect(ak.name).toEqual(first.ak.name)
      const q = yield* tpm.quote(ak, { nonce, selection: sel })
      const attest = Either.getOrThrow(parseAttest(q.attest))
      expect(attest.clockInfo.resetCount).toBe(1)
      // A new AK does not repeat the first one's key.
      expect((yield* tpm.createAk("ecc", ECC)).name).not.toEqual(first.ak.name)
      // A seed that contradicts the file is refused rather than silently ignored.
      const wrong = yield* Effect.either(open({ stateFile, seed: "not the file's seed" }))
      expect(Either.isLeft(wrong)).toBe(true)
    }))

  it.scoped("refuses an AK sealed by another simulator", () =>
    Effect.gen(function*() {
      const a = yield* open({ seed: "owner" })
      const b = yield* open({ seed: "stranger" })
      const ak = yield* a.createAk("ecc", ECC)
      const r = yield* Effect.either(b.quote(ak, { nonce, selection: sel }))
      expect(Either.isLeft(r) && r.left.operation).toBe("quote")
    }))

  it.scoped("fails with a TpmError for banks, PCRs and AK parameters it does not have", () =>
    Effect.gen(function*() {
      const tpm = yield* open({ seed: "errors" })
      const ak = yield* tpm.createAk("ecc", ECC)
      const bank = yield* Effect.either(tpm.quote(ak, { nonce, selection: [{ hash: "sha384", pcrs: [0] }] }))
      expect(Either.isLeft(bank) && bank.left.message).toContain("sha384")
      expect(Either.isLeft(yield* Effect.either(tpm.pcrRead([{ hash: "sha256", pcrs: [24] }])))).toBe(true)
      expect(Either.isLeft(yield* Effect.either(tpm.quote(ak, { nonce: new Uint8Array(65), selection: sel })))).toBe(true)
      expect(Either.isLeft(yield* Effect.either(tpm.createAk("rsa", { alg: "rsa", bits: 1024, hash: "sha256", scheme: "rsassa" })))).toBe(true)
      expect(Either.isLeft(yield* Effect.either(tpm.createAk("ecc", { alg: "ecc", hash: "sha256", scheme: "rsassa" })))).toBe(true)
      const sha384 = yield* open({ seed: "errors", banks: ["sha256", "sha384"] })
      const ak384 = yield* sha384.loadAk(ak.saved)
      const q = yield* sha384.quote(ak384, { nonce, selection: [{ hash: "sha384", pcrs: [0] }] })
      expect(q.pcrs[0]!.values.get(0)!.length).toBe(48)
    }))

  it.scoped("rejects every truncated or flipped AK blob with a typed failure", () =>
    Effect.gen(function*() {
      const tpm = yield* open({ seed: "blob mutations" })
      const ak = yield* tpm.createAk("ecc", ECC)
      const seed = normalizeSeed("blob mutations")
      const blob = ak.saved.private
      fc.assert(
        fc.property(fc.nat({ max: blob.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, xor) => {
          expect(Either.isLeft(unsealAk(seed, ak.saved.public, blob.subarray(0, at)))).toBe(true)
          const flipped = blob.slice()
          flipped[at] = flipped[at]! ^ xor
          expect(Either.isLeft(unsealAk(seed, ak.saved.public, flipped))).toBe(true)
        }),
        { numRuns: 200 }
      )
      expect(Either.isRight(unsealAk(seed, ak.saved.public, blob))).toBe(true)
    }))
})
