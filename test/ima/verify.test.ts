import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ImaVerification } from "../../src/ima/ImaVerification.js"
import { decodeImaState, encodeImaState, initialImaState } from "../../src/ima/state.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVectorText } from "../support/vectors.js"
import { AFTER7, compile, FINAL, hex, makeLine, policyAllowing, tpmList, tpmList256, types } from "./helpers.js"
import { decodeRuntimePolicyJson } from "../../schemas/RuntimePolicy.js"
import { Either } from "effect"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const q1 = () => readVectorText("keylime", "generated", "swtpm-quote-1", "ima-log.txt")
const q1Pcr = { sha256: hex("7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80") }
const q1Policy = (name: "pass" | "fail") =>
  compile(Either.getOrThrow(decodeRuntimePolicyJson(readVectorText("keylime", "generated", "swtpm-quote-1", `runtime-policy-${name}.json`))))

const lines = () => tpmList().split("\n").filter((l) => l !== "")
const withLines = (ls: Array<string>) => ls.join("\n") + "\n"

eachCryptoPort("Keylime verdicts on the generated swtpm quote", () => {
  it("passes runtime-policy-pass with the quoted PCR 10 matched at the last entry", () => {
    const r = verifyIma({ list: q1(), startEntry: 0, policy: q1Policy("pass"), quotedPcr10: q1Pcr })
    expect(r.failures).toEqual([])
    expect(r.matchedEntries).toBe(3)
    expect(r.state.nextEntry).toBe(3)
    expect(r.state.pcrs.sha256).toBe("7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80")
  })
  it("fails runtime-policy-fail with ima.validation.ima-ng.not_in_allowlist naming /usr/bin/evil on entry 3", () => {
    const r = verifyIma({ list: q1(), startEntry: 0, policy: q1Policy("fail"), quotedPcr10: q1Pcr })
    expect(types(r)).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    expect(r.failures[0]!.context.message).toContain("/usr/bin/evil")
    expect(r.failures[0]!.context.line).toBe(3)
    expect(r.state).toEqual(initialImaState())
  })
  it("fails with ima.pcr_mismatch when the quoted PCR 10 is not reached", () => {
    const r = verifyIma({ list: q1(), startEntry: 0, policy: q1Policy("pass"), quotedPcr10: { sha256: new Uint8Array(32).fill(1) } })
    expect(types(r)).toEqual(["ima.pcr_mismatch"])
  })
  it("runs through the ImaVerification service", () =>
    Effect.gen(function*() {
      const svc = yield* ImaVerification
      const compiled = yield* svc.compile(Either.getOrThrow(decodeRuntimePolicyJson(readVectorText("keylime", "generated", "swtpm-quote-1", "runtime-policy-pass.json"))), "k")
      const r = yield* svc.verify({ list: q1(), startEntry: 0, policy: compiled, quotedPcr10: q1Pcr })
      expect(r.failures).toEqual([])
      expect(yield* svc.compile(undefined as never, "k")).toBe(compiled)
    }).pipe(Effect.provide(ImaVerification.Default), Effect.runPromise))
})

eachCryptoPort("altered lists fail with the right type", () => {
  const policy = compile(policyAllowing(tpmList()))
  const quoted = { sha1: hex(FINAL.sha1), sha256: hex(FINAL.sha256) }
  it("the unaltered list passes against a policy of its own digests", () => {
    expect(verifyIma({ list: tpmList(), startEntry: 0, policy, quotedPcr10: quoted }).failures).toEqual([])
  })
  it("a changed path (template hash kept) fails ima_hash and the PCR", () => {
    const ls = lines()
    ls[1] = ls[1]!.replace("/usr/bin/bash", "/usr/bin/bosh")
    expect(types(verifyIma({ list: withLines(ls), startEntry: 0, policy, quotedPcr10: quoted }))).toEqual([
      "ima.validation.ima_hash",
      "ima.pcr_mismatch"
    ])
  })
  it("a changed file digest with the template hash kept fails ima_hash", () => {
    const ls = lines()
    ls[2] = ls[2]!.replace("sha256:cb30", "sha256:cb31")
    const r = verifyIma({ list: withLines(ls), startEntry: 0, policy, quotedPcr10: quoted })
    expect(types(r)).toEqual(["ima.validation.ima_hash", "ima.pcr_mismatch"])
    expect(r.failures[0]!.context.line).toBe(3)
  })
  it("a changed file digest with a recomputed template hash fails runtime_policy_hash and the PCR", () => {
    const ls = lines()
    ls[2] = makeLine("ima-ng", "sha256:" + "11".repeat(32), "/usr/bin/ls")
    expect(types(verifyIma({ list: withLines(ls), startEntry: 0, policy, quotedPcr10: quoted }))).toEqual([
      "ima.validation.ima-ng.runtime_policy_hash",
      "ima.pcr_mismatch"
    ])
  })
  it("a dropped line fails ima.pcr_mismatch", () => {
    const ls = lines()
    ls.splice(4, 1)
    expect(types(verifyIma({ list: withLines(ls), startEntry: 0, policy, quotedPcr10: quoted }))).toEqual(["ima.pcr_mismatch"])
  })
  it("a reordered line fails ima.pcr_mismatch", () => {
    const ls = lines()
    ;[ls[3], ls[4]] = [ls[4]!, ls[3]!]
    expect(types(verifyIma({ list: withLines(ls), startEntry: 0, policy, quotedPcr10: quoted }))).toEqual(["ima.pcr_mismatch"])
  })
  it("an unparsable line fails ima.parser.entry with its entry number", () => {
    const ls = lines()
    ls[5] = "10 zz ima-ng sha256:00 /x"
    const r = verifyIma({ list: withLines(ls), startEntry: 0, policy, quotedPcr10: quoted })
    expect(types(r)).toEqual(["ima.parser.entry", "ima.pcr_mismatch"])
    expect(r.failures[0]!.context.line).toBe(6)
  })
  it("an entry for another PCR fails ima.validation.ima_pcr", () => {
    const line = makeLine("ima-ng", "sha256:" + "ab".repeat(32), "/usr/bin/x", undefined, "11")
    const r = verifyIma({ list: line, startEntry: 0, policy: compile(policyAllowing(line)) })
    expect(types(r)).toEqual(["ima.validation.ima_pcr"])
  })
  it("checks the sha256 template-hash column with sha256 when the policy says log_hash_alg sha256", () => {
    const p = compile(policyAllowing(tpmList256(), { logHashAlg: "sha256" }))
    expect(verifyIma({ list: tpmList256(), startEntry: 0, policy: p, quotedPcr10: quoted }).failures).toEqual([])
  })
  it("the sha256 column of one quoted sha256 bank: upper case passes, another digit fails ima_hash, a non-hex one is unparsable", () => {
    const p = compile(policyAllowing(tpmList256(), { logHashAlg: "sha256" }))
    const ls = tpmList256().split("\n").filter((l) => l !== "")
    const column = (i: number, f: (th: string) => string) => ls.map((l, k) => k === i ? l.replace(/^(\S+) (\S+)/, (_, pcr: string, th: string) => `${pcr} ${f(th)}`) : l)
    const run = (list: Array<string>) => verifyIma({ list: withLines(list), startEntry: 0, policy: p, quotedPcr10: quoted })
    expect(run(column(2, (th) => th.toUpperCase())).failures).toEqual([])
    const flip = (th: string) => th.slice(0, 10) + (th[10] === "0" ? "1" : "0") + th.slice(11)
    // the PCR is extended with the computed hash, so only the entry fails
    expect(types(run(column(2, flip)))).toEqual(["ima.validation.ima_hash"])
    // an unparsable line is not extended
    expect(types(run(column(2, (th) => th.slice(0, 10) + "z" + th.slice(11))))).toEqual(["ima.parser.entry", "ima.pcr_mismatch"])
  })
})

eachCryptoPort("excludes and boot_aggregate", () => {
  it("skips excluded paths (regular expressions matched at the start of the path)", () => {
    const base = policyAllowing(tpmList())
    const digests = { ...base.digests }
    delete (digests as Record<string, unknown>)["/usr/bin/bash"]
    delete (digests as Record<string, unknown>)["/usr/lib/x86_64-linux-gnu/libc.so.6"]
    const failing = verifyIma({ list: tpmList(), startEntry: 0, policy: compile({ ...base, digests }) })
    expect(types(failing)).toEqual(["ima.validation.ima-ng.not_in_allowlist", "ima.validation.ima-ng.not_in_allowlist"])
    const excluded = compile({ ...base, digests, excludes: ["/usr/bin/ba.h", "/usr/lib/.*"] })
    expect(verifyIma({ list: tpmList(), startEntry: 0, policy: excluded }).failures).toEqual([])
    // re.match anchors at the start only: "bin/bash" does not exclude "/usr/bin/bash"
    expect(types(verifyIma({ list: tpmList(), startEntry: 0, policy: compile({ ...base, digests, excludes: ["bin/bash", "/usr/lib/.*"] }) }))).toEqual([
      "ima.validation.ima-ng.not_in_allowlist"
    ])
  })
  it("accepts boot_aggregate values handed in by the caller (8- and 10-PCR aggregates)", () => {
    const base = policyAllowing(tpmList())
    const digests = { ...base.digests }
    delete (digests as Record<string, unknown>)["boot_aggregate"]
    const p = compile({ ...base, digests })
    expect(types(verifyIma({ list: tpmList(), startEntry: 0, policy: p }))).toEqual(["ima.validation.ima-ng.not_in_allowlist"])
    const ba = JSON.parse(readVectorText("tpm", "ima", "pcr10_trace.json"))
    expect(
      verifyIma({ list: tpmList(), startEntry: 0, policy: p, bootAggregates: [ba.boot_aggregate_sha1_bank_variant, ba.boot_aggregate_sha256] }).failures
    ).toEqual([])
    expect(types(verifyIma({ list: tpmList(), startEntry: 0, policy: p, bootAggregates: ["00".repeat(32)] }))).toEqual([
      "ima.validation.ima-ng.runtime_policy_hash"
    ])
  })
})

eachCryptoPort("incremental attestation", () => {
  const policy = compile(policyAllowing(tpmList()))
  it("evaluating the list in chunks gives the same result and PCR as evaluating it whole", () => {
    const ls = lines()
    const whole = verifyIma({ list: tpmList(), startEntry: 0, policy, quotedPcr10: { sha256: hex(FINAL.sha256) } })
    const first = verifyIma({ list: withLines(ls.slice(0, 7)), startEntry: 0, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) } })
    expect(first.state.nextEntry).toBe(7)
    // the state survives JSON persistence
    const persisted = Either.getOrThrow(decodeImaState(encodeImaState(first.state)))
    const second = verifyIma({ list: withLines(ls.slice(7)), startEntry: 7, state: persisted, policy, quotedPcr10: { sha256: hex(FINAL.sha256) } })
    expect(second.failures).toEqual([])
    expect(second.state).toEqual(whole.state)
    expect(second.state.pcrs.sha256).toBe(FINAL.sha256)
  })
  it("accepts entries up to a part-way PCR match and leaves the rest for the next round", () => {
    const r = verifyIma({ list: tpmList(), startEntry: 0, policy, quotedPcr10: { sha1: hex(AFTER7.sha1), sha256: hex(AFTER7.sha256) } })
    expect(r.failures).toEqual([])
    expect(r.matchedEntries).toBe(7)
    expect(r.state.nextEntry).toBe(7)
    expect(r.state.pcrs).toEqual(AFTER7)
    const next = verifyIma({ list: withLines(lines().slice(7)), startEntry: 7, state: r.state, policy, quotedPcr10: { sha1: hex(FINAL.sha1), sha256: hex(FINAL.sha256) } })
    expect(next.failures).toEqual([])
    expect(next.state.nextEntry).toBe(10)
  })
  it("an empty chunk with the stored PCR quoted passes and keeps the state", () => {
    const r = verifyIma({ list: tpmList(), startEntry: 0, policy, quotedPcr10: { sha256: hex(FINAL.sha256) } })
    const again = verifyIma({ list: "", startEntry: 10, state: r.state, policy, quotedPcr10: { sha256: hex(FINAL.sha256) } })
    expect(again.failures).toEqual([])
    expect(again.state).toEqual(r.state)
  })
  it("new lines not yet in the quote are left for the next round", () => {
    const r = verifyIma({ list: withLines(lines().slice(0, 7)), startEntry: 0, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) } })
    const early = verifyIma({ list: withLines(lines().slice(7)), startEntry: 7, state: r.state, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) } })
    expect(early.failures).toEqual([])
    expect(early.matchedEntries).toBe(0)
    expect(early.state.nextEntry).toBe(7)
  })
  it("entry 0 starts over whatever the state", () => {
    const r = verifyIma({ list: withLines(lines().slice(0, 7)), startEntry: 0, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) } })
    const fresh = verifyIma({ list: tpmList(), startEntry: 0, state: r.state, policy, quotedPcr10: { sha256: hex(FINAL.sha256) } })
    expect(fresh.failures).toEqual([])
    expect(fresh.state.nextEntry).toBe(10)
  })
  it("a list starting at another entry than requested fails qoute_validation.invalid_ima_entry_nb", () => {
    const r = verifyIma({ list: withLines(lines().slice(0, 7)), startEntry: 0, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) } })
    const wrong = verifyIma({ list: withLines(lines().slice(8)), startEntry: 8, state: r.state, policy, quotedPcr10: { sha256: hex(FINAL.sha256) } })
    expect(types(wrong)).toEqual(["qoute_validation.invalid_ima_entry_nb"])
    expect(wrong.state.nextEntry).toBe(0)
  })
  it("a changed boot time resets the state and asks for a full list without a failure", () => {
    const r = verifyIma({ list: withLines(lines().slice(0, 7)), startEntry: 0, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) }, bootTime: 1000 })
    expect(r.state.bootTime).toBe(1000)
    const rebooted = verifyIma({ list: withLines(lines().slice(7)), startEntry: 7, state: r.state, policy, quotedPcr10: { sha256: hex(FINAL.sha256) }, bootTime: 2000 })
    expect(rebooted.retry).toBe(true)
    expect(rebooted.failures).toEqual([])
    expect(rebooted.state).toEqual(initialImaState(2000))
  })
  it("any failure resets the state to entry 0", () => {
    const r = verifyIma({ list: withLines(lines().slice(0, 7)), startEntry: 0, policy, quotedPcr10: { sha256: hex(AFTER7.sha256) } })
    const bad = verifyIma({ list: withLines(lines().slice(7)), startEntry: 7, state: r.state, policy, quotedPcr10: { sha256: new Uint8Array(32) } })
    expect(types(bad)).toEqual(["ima.pcr_mismatch"])
    expect(bad.state.nextEntry).toBe(0)
  })
})
