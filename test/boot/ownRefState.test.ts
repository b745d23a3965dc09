/**
 * A reference state made from a log accepts that log, for every event log in the vectors, while the
 * changes an attacker or a broken machine would make still fail with the right type: a changed boot
 * application, a changed Secure Boot variable (logged consistently, or measured but not logged),
 * and a quote whose PCRs are not the log's replay.
 */
import { expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { createRefState } from "../../src/boot/createRefState.js"
import { evaluateMeasuredBoot } from "../../src/boot/evaluate.js"
import { EV } from "../../src/boot/eventTypes.js"
import { examplePolicy } from "../../src/boot/examplePolicy.js"
import { replayPcrs } from "../../src/boot/replay.js"
import { parsed, signatureKeys, vectorEventLogs, withBootAppChanged, withDigestsOf } from "./support.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const logs = vectorEventLogs().map(({ name, bytes }) => {
  const log = parsed(bytes)
  const sb = log.events.find((e) => e.decoded.kind === "variable" && e.decoded.unicodeName === "SecureBoot")
  const secure = sb?.decoded.kind === "variable" && sb.decoded.value.kind === "enabled" && sb.decoded.value.enabled
  // What an operator runs: --without-secureboot exactly when the machine boots without it.
  const created = createRefState(log, { withoutSecureBoot: !secure })
  return { name, bytes, log, created }
})
const refstateOf = (i: number) => Either.getOrThrowWith(logs[i]!.created, (e) => new Error(`${logs[i]!.name}: ${e.message}`)).refstate
const judge = (bytes: Uint8Array, quoted: Uint8Array, refstate: unknown) =>
  evaluateMeasuredBoot({ log: bytes, quotedPcrs: replayPcrs(parsed(quoted)), refstate }, examplePolicy).failures

/** Secure Boot variables with content the policy judges, per log: [event index, name]. */
const judgedVariables = (i: number) =>
  logs[i]!.log.events.flatMap((e) =>
    e.pcr === 7 && e.type === EV.EFI_VARIABLE_DRIVER_CONFIG && e.decoded.kind === "variable" && ["SecureBoot", "PK", "KEK", "db", "dbx"].includes(e.decoded.unicodeName)
      ? [[e.index, e.decoded.unicodeName] as const]
      : []
  )

const logIndex = fc.integer({ min: 0, max: logs.length - 1 })

eachCryptoPort("a reference state made from a log accepts that log", () => {
  it("finds every UEFI event log of the vectors (binary and base64)", () => {
    expect(logs.map((l) => l.name).sort()).toEqual([
      "keylime/test/data/create-mb-policy/binary_bios_measurements",
      "keylime/test/data/create-mb-policy/binary_bios_measurements-secureboot",
      "keylime/test/data/mb_log.b64",
      "rust-keylime/keylime-push-model-agent/test-data/uefi_log.bin",
      "rust-keylime/keylime/test-data/uefi_log.bin",
      "tpm/eventlog/event-gce-ubuntu-2104-log.bin"
    ])
  })

  it("passes every vector log against the reference state created from it", () => {
    for (const [i, l] of logs.entries()) expect([l.name, judge(l.bytes, l.bytes, refstateOf(i))]).toEqual([l.name, []])
  })

  it("fails a changed boot application (log and PCR 4 consistent) with measured_boot.policy_example naming the boot applications", () => {
    fc.assert(
      fc.property(logIndex, fc.nat(), (i, n) => {
        const apps = logs[i]!.log.events.filter((e) => e.type === EV.EFI_BOOT_SERVICES_APPLICATION)
        const changed = withBootAppChanged(logs[i]!.bytes, n % apps.length)
        const failures = judge(changed, changed, refstateOf(i))
        expect([logs[i]!.name, failures.map((f) => f.type)]).toEqual([logs[i]!.name, ["measured_boot.policy_example"]])
        expect(String(failures[0]!.context["reason"])).toMatch(/bsas|platform_events/)
      }),
      { numRuns: 40 }
    )
  })

  it("fails a changed Secure Boot variable logged consistently (data and digests) with measured_boot.policy_example at that event", () => {
    fc.assert(
      fc.property(logIndex, fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), (i, v, k, mask) => {
        const { bytes, index, name } = variableChanged(i, v, k, mask)
        const consistent = withDigestsOf(bytes, index, parsed(bytes).events[index]!.data)
        const failures = judge(consistent, consistent, refstateOf(i))
        expect([logs[i]!.name, name, failures.map((f) => f.type)]).toEqual([logs[i]!.name, name, ["measured_boot.policy_example"]])
        expect(String(failures[0]!.context["reason"])).toMatch(new RegExp(`^event ${index} \\(PCR 7, EV_EFI_VARIABLE_DRIVER_CONFIG\\) `))
      }),
      { numRuns: 60 }
    )
  })

  it("fails a Secure Boot variable that was measured changed but is logged as before (PCRs match the log) with measured_boot.policy_example", () => {
    fc.assert(
      fc.property(logIndex, fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), (i, v, k, mask) => {
        const { bytes, index, name } = variableChanged(i, v, k, mask)
        // The TPM measured the changed variable; the log still shows the original data.
        const lying = withDigestsOf(logs[i]!.bytes, index, parsed(bytes).events[index]!.data)
        const failures = judge(lying, lying, refstateOf(i))
        expect([logs[i]!.name, name, failures.map((f) => f.type)]).toEqual([logs[i]!.name, name, ["measured_boot.policy_example"]])
        expect(String(failures[0]!.context["reason"])).toMatch(/is not the hash of the logged variable/)
      }),
      { numRuns: 40 }
    )
  })

  it("reports measured_boot.invalid_pcr_<n> alone when the quote is of a changed boot and the log is the reference one", () => {
    fc.assert(
      fc.property(logIndex, fc.boolean(), fc.nat(), fc.nat(), (i, app, n, k) => {
        const l = logs[i]!
        let booted: Uint8Array
        if (app) {
          const apps = l.log.events.filter((e) => e.type === EV.EFI_BOOT_SERVICES_APPLICATION)
          booted = withBootAppChanged(l.bytes, n % apps.length)
        } else {
          const { bytes, index } = variableChanged(i, n, k, 0x5a)
          booted = withDigestsOf(bytes, index, parsed(bytes).events[index]!.data)
        }
        expect(judge(l.bytes, booted, refstateOf(i)).map((f) => f.type)).toEqual([`measured_boot.invalid_pcr_${app ? 4 : 7}`])
      }),
      { numRuns: 40 }
    )
  })
})

/**
 * Keys an attacker could change without the variable still holding it: those that occur once (real
 * dbx lists repeat some hashes, and dbx only has to hold the required set).
 */
const uniqueKeys = (bytes: Uint8Array, index: number) => {
  const keys = signatureKeys(bytes, index)
  return keys.filter((key) => keys.filter((other) => other.id === key.id).length === 1)
}

/**
 * Log `i` with one judged Secure Boot variable changed in its data only (digests untouched):
 * SecureBoot's Enabled byte flipped, or one byte of one key of PK, KEK, db or a non-empty dbx.
 */
const variableChanged = (i: number, v: number, k: number, mask: number) => {
  const bytes = new Uint8Array(logs[i]!.bytes)
  const candidates = judgedVariables(i).filter(([index, name]) => name === "SecureBoot" || uniqueKeys(bytes, index).length > 0)
  const [index, name] = candidates[v % candidates.length]!
  if (name === "SecureBoot") {
    const data = logs[i]!.log.events[index]!.data
    bytes[data.byteOffset - logs[i]!.bytes.byteOffset + data.length - 1]! ^= 1
  } else {
    const keys = uniqueKeys(bytes, index)
    const key = keys[k % keys.length]!
    bytes[key.at + (k % key.length)]! ^= mask
  }
  return { bytes, index, name }
}
