import { describe, expect, it } from "@effect/vitest"
import { X509Certificate } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, FastCheck as fc } from "effect"
import { toPem } from "../../src/crypto/pem.js"
import { AMD_ROOT_PEMS } from "../../src/tee/snp/amdRoots.js"
import { amdRoots, makeSnpRoots, verifyVcekChain } from "../../src/tee/snp/chain.js"
import { encodeTcb } from "../../src/tee/snp/tcb.js"
import { parseVcek } from "../../src/tee/snp/vcek.js"
import { loadVcekDirectory } from "../../src/tee/snp/vcekDirectory.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { eachCryptoPort, settled } from "../support/cryptoPorts.js"
import { makeTestChain, milanReport, milanVcek, turinVcek } from "./support.js"

// with every RSA check answered (AMD's chain is RSA-PSS: the portable port asks WebCrypto)
const vChain = (...a: Parameters<typeof verifyVcekChain>) => settled(() => verifyVcekChain(...a))
const vRoots = (...a: Parameters<typeof makeSnpRoots>) => settled(() => makeSnpRoots(...a))
const vAmd = () => settled(() => amdRoots())

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const now = new Date("2026-11-21T00:00:00Z")

describe("VCEK certificates", () => {
  it("reads AMD's extensions of the real Milan VCEK: product, TCB and the hwID that is the report's chip id", () => {
    const v = Either.getOrThrow(parseVcek(milanVcek()))
    expect([v.productName, v.product, v.tcb]).toEqual(["Milan-B0", "Milan", { bootloader: 3, tee: 0, snp: 8, microcode: 115 }])
    expect(hex(v.hwId)).toBe(hex(milanReport().subarray(0x1a0, 0x1e0)))
    expect(v.publicKey).toMatchObject({ type: "ec", curve: "P-384" })
  })

  it("reads the real Turin VCEK: its FMC level and 8-byte hwID", () => {
    const v = Either.getOrThrow(parseVcek(turinVcek()))
    expect([v.productName, v.product, v.tcb.fmc, v.tcb.microcode, v.hwId.length]).toEqual(["Turin", "Turin", 0, 9, 8])
  })

  it("round-trips the extensions the tests issue with the project's CA code, for every product line", () => {
    for (const product of ["Milan", "Genoa", "Turin"] as const) {
      const chain = makeTestChain({ product })
      const v = Either.getOrThrow(parseVcek(chain.vcekDer))
      expect([v.product, v.tcb, hex(v.hwId)]).toEqual([product, chain.tcb, hex(chain.chipId.subarray(0, product === "Turin" ? 8 : 64))])
    }
  })

  it("refuses certificates without AMD's extensions or with an unknown product, saying which", () => {
    const notVcek = readVector("tpm", "ek", "ek_rsa_cert.der")
    const r = parseVcek(notVcek)
    expect(Either.isLeft(r) && r.left.message).toMatch(/^VCEK lacks AMD's productName extension \(1\.3\.6\.1\.4\.1\.3704\.1\.2\)/)
    const garbage = parseVcek(new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00]))
    expect(Either.isLeft(garbage) && garbage.left.message).toMatch(/^VCEK is not an X\.509 certificate/)
  })

  it("turns random byte flips of the real VCEK into a typed error or a VCEK, never an exception", () => {
    const real = milanVcek()
    fc.assert(
      fc.property(fc.integer({ min: 0, max: real.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, mask) => {
        const b = new Uint8Array(real)
        b[at]! ^= mask
        const r = parseVcek(b)
        expect(Either.isRight(r) || r.left._tag === "VcekError").toBe(true)
      }),
      { numRuns: 300 }
    )
  })
})

eachCryptoPort("AMD roots and the chain ARK → ASK → VCEK", () => {
  it("ships AMD's ARK and ASK of Milan, Genoa and Turin byte for byte as the vectors hold them; each ARK is self-signed and signs its ASK", async () => {
    for (const [product, pems] of Object.entries(AMD_ROOT_PEMS)) {
      const lower = product.toLowerCase()
      expect(pems.ark.trim()).toBe(readVectorText("snp", `${lower}-ark.pem`).trim())
      expect(pems.ask.trim()).toBe(readVectorText("snp", `${lower}-ask.pem`).trim())
    }
    const roots = (await vAmd())
    expect([...roots.keys()]).toEqual(["Milan", "Genoa", "Turin"])
    for (const [product, pair] of roots) {
      // checked again with node's X.509 code
      const [ark, ask] = [new X509Certificate(pair.ark.der), new X509Certificate(pair.ask.der)]
      expect([product, ark.verify(ark.publicKey), ask.verify(ark.publicKey), ark.subject.includes(`ARK-${product}`), pair.ark.subjectText.includes(`ARK-${product}`)]).toEqual([product, true, true, true, true])
    }
  })

  it("matches the cert_chain files of Milan and Turin (ASK then ARK)", async () => {
    for (const product of ["Milan", "Turin"] as const) {
      const chain = readVectorText("snp", `cert_chain_${product.toLowerCase()}`)
      const pair = (await vAmd()).get(product)!
      expect(chain).toContain(new X509Certificate(pair.ask.der).toString().trim().split("\n")[1])
      expect(chain).toContain(new X509Certificate(pair.ark.der).toString().trim().split("\n")[1])
    }
  })

  it("verifies the real Milan and Turin VCEKs to AMD's roots of their product line", async () => {
    for (const der of [milanVcek(), turinVcek()]) {
      const v = Either.getOrThrow(parseVcek(der))
      const chain = await vChain(v, (await vAmd()), now)
      expect([v.product, Either.isRight(chain)]).toEqual([v.product, true])
    }
  })

  it("refuses a VCEK against another product line's roots, and a root set whose ASK the ARK did not sign", async () => {
    const milan = Either.getOrThrow(parseVcek(milanVcek()))
    const turinOnly = Either.getOrThrow(await vRoots({ Turin: AMD_ROOT_PEMS.Turin }))
    const r = await vChain(milan, turinOnly, now)
    expect(Either.isLeft(r) && r.left.reason).toBe("no ARK/ASK for Milan (the VCEK's product Milan-B0)")
    const mixed = await vRoots({ Milan: { ark: AMD_ROOT_PEMS.Milan.ark, ask: AMD_ROOT_PEMS.Genoa.ask } })
    expect(Either.isLeft(mixed) && mixed.left.message).toBe("SEV-SNP roots for Milan: the ASK is not signed by the ARK")
    const test = makeTestChain()
    const notSelfSigned = await vRoots({ Milan: { ark: test.askDer, ask: test.askDer } })
    expect(Either.isLeft(notSelfSigned) && notSelfSigned.left.message).toBe("SEV-SNP roots for Milan: the ARK is not self-signed")
  })

  it("refuses the real VCEK outside its validity (it ends in 2030)", async () => {
    const r = await vChain(Either.getOrThrow(parseVcek(milanVcek())), (await vAmd()), new Date("2031-01-01T00:00:00Z"))
    expect(Either.isLeft(r) && r.left.reason).toMatch(/^Milan chain ARK → ASK → VCEK: certificate .*SEV-VCEK expired at 2030-04-03/)
  })

  it("gives the window in which the whole chain is valid", async () => {
    const r = Either.getOrThrow(await vChain(Either.getOrThrow(parseVcek(milanVcek())), (await vAmd()), now))
    expect([new Date(r.validFrom).toISOString(), new Date(r.validUntil).toISOString()]).toEqual(["2023-04-03T19:23:43.000Z", "2030-04-03T19:23:43.000Z"])
    expect(new X509Certificate(milanVcek()).validTo).toMatch(/2030/)
  })
})

describe("snp_vcek_dir", () => {
  it.effect("loads DER and PEM VCEKs once, lists other files as skipped, and finds a VCEK by chip id and reported TCB", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-vcek-"))
      const report = milanReport()
      const chipId = report.subarray(0x1a0, 0x1e0)
      writeFileSync(join(dir, `${hex(chipId)}-blSPL=03-teeSPL=00-snpSPL=08-ucodeSPL=115.der`), milanVcek())
      writeFileSync(join(dir, "turin.pem"), toPem(turinVcek()))
      writeFileSync(join(dir, "README"), "not a certificate")
      const loaded = yield* loadVcekDirectory(dir)
      expect(loaded.entries.map((e) => e.vcek.product).sort()).toEqual(["Milan", "Turin"])
      expect(loaded.skipped.map((s) => s.file)).toEqual([join(dir, "README")])
      expect(loaded.lookup(chipId, report.subarray(0x180, 0x188))?.vcek.productName).toBe("Milan-B0")
      // Another TCB of the same chip is another VCEK.
      expect(loaded.lookup(chipId, encodeTcb({ bootloader: 3, tee: 0, snp: 9, microcode: 115 }, "Milan"))).toBeUndefined()
      const turin = loaded.entries.find((e) => e.vcek.product === "Turin")!.vcek
      const turinChip = new Uint8Array(64)
      turinChip.set(turin.hwId)
      expect(loaded.lookup(turinChip, encodeTcb(turin.tcb, "Turin"))?.vcek.product).toBe("Turin")
    })
  )

  it.effect("fails with VcekDirectoryError naming a directory it cannot read", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(loadVcekDirectory("/nonexistent/attest-vcek-dir"))
      expect(e._tag).toBe("VcekDirectoryError")
      expect(e.message).toMatch(/^cannot read snp_vcek_dir \/nonexistent\/attest-vcek-dir: /)
    })
  )
})
