import { describe, expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Either } from "effect"
import { makeRuntimePolicy } from "../../schemas/RuntimePolicy.js"
import { keyringFromPems } from "../../src/ima/signatures.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { compile, makeLine, tpmList } from "./helpers.js"

const certDer = readVector("tpm", "ima", "ima_cert.der")
const digest = crypto.createHash("sha256").update(certDer).digest("hex")
const keyLine = makeLine("ima-buf", `sha256:${digest}`, ".ima", Buffer.from(certDer).toString("hex"))
const signedLine = tpmList().split("\n").find((l) => l.includes("/usr/local/bin/hello.sh"))!
const policy = compile(makeRuntimePolicy({ keyrings: { ".ima": [digest] } }))

describe("keyrings across rounds", () => {
  it("learns into the round's own layer: the tenant's keyring and the policy's keys are left as they were", () => {
    const tenant = Either.getOrThrow(keyringFromPems([readVectorText("tpm", "ima", "ima_ec_cert.pem")]))
    const before = [tenant.size, tenant.learned.length, policy.verificationKeys.size]
    const r = verifyIma({ list: `${keyLine}\n${signedLine}\n`, startEntry: 0, policy, keyring: tenant })
    expect(r.failures).toEqual([])
    expect(r.state.learnedKeys).toHaveLength(1)
    expect([tenant.size, tenant.learned.length, policy.verificationKeys.size]).toEqual(before)
  })
  it("restores learned keys from the state in every round, dropping a stored entry that is not a key", () => {
    const first = verifyIma({ list: `${keyLine}\n`, startEntry: 0, policy })
    const learned = first.state.learnedKeys[0]!
    const state = { ...first.state, learnedKeys: [{ keyring: ".ima", der: "bm90IGEga2V5" }, learned] }
    for (let round = 0; round < 3; round++) {
      const next = verifyIma({ list: `${signedLine}\n`, startEntry: 1, state, policy })
      expect(next.failures).toEqual([])
      expect(next.state.learnedKeys).toEqual([learned])
    }
  })
})
