/**
 * The pure registration checks: Keylime's recorded activation (blob → secret → auth_tag) reproduced
 * byte for byte, and random truncations and byte flips of the TPM structures end in a typed error
 * naming the field, never an exception.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import { RegisterRequest } from "../../schemas/Registrar.js"
import { authTagMatches, expectedAuthTag, makeChallenge, parseRegistration, randomChallenge } from "../../src/registrar/registration.js"
import { decodeCredentialFile } from "../../src/tpm/credential.js"
import { needsSwtpm } from "../support/requirements.js"
import { readVectorText } from "../support/vectors.js"
import { startWireTpm } from "./wireSwtpm.js"

interface Rec {
  readonly id: string
  readonly request: { readonly path: string; readonly body?: Record<string, unknown> }
  readonly response: { readonly body: { readonly results: Record<string, string> } }
}
const records = readVectorText("keylime-wire", "registrar.jsonl").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Rec)
const byId = (id: string) => records.find((r) => r.id === id)!
const registered = byId("reg-register-ok")
const body = Schema.decodeUnknownSync(RegisterRequest)(registered.request.body)

describe("registration checks", () => {
  it("accepts Keylime's recorded registration and makes a blob in the tpm2-tools file format", () => {
    const parsed = parseRegistration(body, "default")
    expect(Either.isRight(parsed)).toBe(true)
    const challenge = makeChallenge(Either.getOrThrow(parsed))
    const file = Either.getOrThrow(challenge).blob
    expect(Buffer.from(file.subarray(0, 8)).toString("hex")).toBe("badcc0de00000001")
    expect(Either.isRight(decodeCredentialFile(file))).toBe(true)
    // Keylime's recorded blob has the same layout and sizes (RSA 2048 EK, sha256 names)
    const recorded = new Uint8Array(Buffer.from(registered.response.body.results["blob"]!, "base64"))
    expect(file.length).toBe(recorded.length)
  })

  it("draws challenges of 32 letters and digits", () => {
    for (let i = 0; i < 200; i++) expect(Buffer.from(randomChallenge()).toString("latin1")).toMatch(/^[A-Za-z0-9]{32}$/)
  })

  it("never throws on truncated or flipped aik_tpm / ek_tpm bytes, and names the field", () => {
    const ak = Buffer.from(body.aik_tpm, "base64")
    const ek = Buffer.from(body.ek_tpm!, "base64")
    fc.assert(
      fc.property(fc.boolean(), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean(), (onAk, cut, at, xor, truncate) => {
        const target = Buffer.from(onAk ? ak : ek)
        const mutated = truncate ? target.subarray(0, cut % target.length) : (target[at % target.length] ^= xor, target)
        const b64 = Schema.decodeSync(Schema.String)(mutated.toString("base64"))
        const r = parseRegistration({ ...body, [onAk ? "aik_tpm" : "ek_tpm"]: b64 } as typeof body, "default")
        if (Either.isLeft(r)) {
          expect(["aik_tpm", "ek_tpm"]).toContain(r.left.field)
        } else {
          // a flip inside the key material can leave a well-formed key: then it is what was sent
          expect(Buffer.from(onAk ? r.right.akTpm : r.right.ekTpm).equals(mutated)).toBe(true)
          const c = makeChallenge(r.right)
          if (Either.isLeft(c)) expect(c.left.field).toBe("ek_tpm")
        }
      }),
      { numRuns: 500 }
    )
  })

  it("compares auth tags exactly", () => {
    fc.assert(fc.property(fc.string(), fc.string({ minLength: 1 }), (key, id) => {
      const tag = expectedAuthTag(key, id)
      expect(tag).toMatch(/^[0-9a-f]{96}$/)
      expect(authTagMatches(tag, key, id)).toBe(true)
      expect(authTagMatches(tag.toUpperCase() === tag ? `${tag}0` : tag.toUpperCase(), key, id)).toBe(false)
      expect(authTagMatches("", key, id)).toBe(false)
    }), { numRuns: 300 })
  })
})

const ok = needsSwtpm()
describe.skipIf(!ok)("Keylime's recorded activation", () => {
  it("reproduces the recorded auth_tag from the recorded blob with the capture's TPM", async () => {
    const tpm = await startWireTpm()
    try {
      for (const [reg, act] of [["reg-register-ok", "reg-activate-ok"], ["reg-v25-register-ok", "reg-v25-activate-ok"]] as const) {
        const blob = new Uint8Array(Buffer.from(byId(reg).response.body.results["blob"]!, "base64"))
        const secret = await tpm.activate(blob)
        expect(Buffer.from(secret).toString("latin1")).toMatch(/^[A-Za-z0-9]{32}$/)
        const agentId = byId(reg).request.path.split("/").pop()!
        const recordedTag = byId(act).request.body!["auth_tag"]
        expect(expectedAuthTag(Buffer.from(secret).toString("base64"), agentId)).toBe(recordedTag)
      }
    } finally {
      await tpm.stop()
    }
  }, 60_000)
})
