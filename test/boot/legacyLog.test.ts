/**
 * Legacy SHA-1 event logs (TCG_PCR_EVENT records only, no crypto-agile header): parsed and replayed
 * into the sha1 bank. The vector is built here from the simulated machine's boot, digested with SHA-1
 * as firmware without crypto-agile support measures it.
 */
import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Either, FastCheck as fc } from "effect"
import { simulatedBootEvents } from "../../src/agent/measurements/bootLog.js"
import { createRefState } from "../../src/boot/createRefState.js"
import { encodeEventLog, encodeLegacyEventLog, type LegacyEventToEncode } from "../../src/boot/encode.js"
import { evaluateMeasuredBoot } from "../../src/boot/evaluate.js"
import { parseEventLog, parseEventLogInput } from "../../src/boot/eventLog.js"
import { EV } from "../../src/boot/eventTypes.js"
import type { MbPolicy } from "../../src/boot/policy.js"
import { replayPcrs } from "../../src/boot/replay.js"
import { toHex } from "../../src/boot/text.js"
import type { PcrValues } from "../../src/tpm/Tpm.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const sha1 = (b: Uint8Array) => new Uint8Array(createHash("sha1").update(b).digest())
const boot = simulatedBootEvents("legacy-machine")
const legacyEvents: ReadonlyArray<LegacyEventToEncode> = boot.map((e) => ({ pcr: e.pcr, type: e.type, data: e.data, digest: sha1(e.measured ?? e.data) }))
const legacyLog = encodeLegacyEventLog(legacyEvents)

/** What a TPM's sha1 bank holds after these extends (EV_NO_ACTION is not extended). */
const naiveSha1 = (events: ReadonlyArray<LegacyEventToEncode>): Map<number, string> => {
  const pcrs = new Map<number, Buffer>()
  for (const e of events) {
    if (e.type === EV.NO_ACTION) continue
    pcrs.set(e.pcr, createHash("sha1").update(pcrs.get(e.pcr) ?? Buffer.alloc(20)).update(e.digest).digest())
  }
  return new Map([...pcrs].map(([p, v]) => [p, v.toString("hex")]))
}
const sha1Bank = (values: PcrValues) => new Map([...(values.find((b) => b.hash === "sha1")?.values ?? [])].map(([p, v]) => [p, toHex(v)]))

const pcrsOnly: MbPolicy = { name: "pcrs-only", relevantPcrs: new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), evaluate: () => "" }

const eventArb = fc.record({
  pcr: fc.integer({ min: 0, max: 23 }),
  // Types whose body any bytes are (structured bodies such as UEFI variables have their own tests).
  type: fc.constantFrom(EV.IPL, EV.SEPARATOR, EV.EFI_ACTION, EV.POST_CODE, EV.S_CRTM_VERSION, EV.NO_ACTION, 0x1234),
  data: fc.uint8Array({ maxLength: 64 }),
  digest: fc.uint8Array({ minLength: 20, maxLength: 20 })
})

eachCryptoPort("legacy SHA-1 event logs", () => {
  it("parses the simulated boot written as a legacy log: sha1 format and bank, every event, and the PCRs a TPM's sha1 bank would hold", () => {
    const log = Either.getOrThrow(parseEventLog(legacyLog))
    expect(log.format).toBe("sha1")
    expect(log.algorithms).toEqual([{ algId: 0x0004, alg: "sha1", digestSize: 20 }])
    expect(log.events.map((e) => [e.pcr, e.type])).toEqual(boot.map((e) => [e.pcr, e.type]))
    expect(log.events.find((e) => e.type === EV.S_CRTM_VERSION)?.decoded.kind).toBe("string")
    const replayed = replayPcrs(log)
    expect(replayed.map((b) => b.hash)).toEqual(["sha1"])
    const want = naiveSha1(legacyEvents)
    for (const [pcr, hex] of sha1Bank(replayed)) expect([pcr, hex]).toEqual([pcr, want.get(pcr) ?? "00".repeat(20)])
  })

  it("replays to the sha1 bank of the same boot written as a crypto-agile log", () => {
    const agile = encodeEventLog(["sha1", "sha256"], boot.map((e) => ({ pcr: e.pcr, type: e.type, data: e.data, digests: [sha1(e.measured ?? e.data), createHash("sha256").update(e.measured ?? e.data).digest()] })))
    const fromAgile = sha1Bank(replayPcrs(Either.getOrThrow(parseEventLog(agile))))
    expect(sha1Bank(replayPcrs(Either.getOrThrow(parseEventLog(legacyLog))))).toEqual(fromAgile)
  })

  it("skips the EFI 1.2 Spec ID Event02 header some firmware writes (EV_NO_ACTION, not extended)", () => {
    const log = Either.getOrThrow(parseEventLog(encodeLegacyEventLog(legacyEvents, { specIdHeader: true })))
    expect(log.format).toBe("sha1")
    expect(log.events[0]!.decoded).toEqual({ kind: "noAction", signature: "Spec ID Event02" })
    expect(sha1Bank(replayPcrs(log))).toEqual(sha1Bank(replayPcrs(Either.getOrThrow(parseEventLog(legacyLog)))))
  })

  it("passes the measured-boot PCR check against quoted sha1 PCRs, fails a changed PCR with invalid_pcr_<n>, and a sha256 quote for lack of the bank", () => {
    const values = new Map([...naiveSha1(legacyEvents)].map(([p, hex]) => [p, new Uint8Array(Buffer.from(hex, "hex"))]))
    for (const p of pcrsOnly.relevantPcrs) if (!values.has(p)) values.set(p, new Uint8Array(20))
    const quoted: PcrValues = [{ hash: "sha1", values }]
    const input = { log: legacyLog, quotedPcrs: quoted, refstate: { any: 1 } }
    expect(evaluateMeasuredBoot(input, pcrsOnly).failures).toEqual([])
    const changed = new Map(values)
    changed.set(4, sha1(new Uint8Array([1])))
    expect(evaluateMeasuredBoot({ ...input, quotedPcrs: [{ hash: "sha1", values: changed }] }, pcrsOnly).failures.map((f) => f.type)).toEqual(["measured_boot.invalid_pcr_4"])
    const sha256Quote: PcrValues = [{ hash: "sha256", values: new Map([[0, new Uint8Array(32)]]) }]
    expect(evaluateMeasuredBoot({ ...input, quotedPcrs: sha256Quote }, pcrsOnly).failures.map((f) => f.type)).toContain("measured_boot.parser.invalid_pcrs_hashes")
  })

  it("refuses to make an example reference state from a legacy log, saying it has no sha256 bank", () => {
    const r = createRefState(Either.getOrThrow(parseEventLog(legacyLog)))
    expect(Either.isLeft(r) && r.left.message).toMatch(/no sha256 bank \(a legacy SHA-1 log\)/)
  })

  it("names the event, field and offset of an oversized EventSize and of a PCRIndex above 23", () => {
    const third = Either.getOrThrow(parseEventLog(legacyLog)).events[2]!
    const big = new Uint8Array(legacyLog)
    new DataView(big.buffer).setUint32(third.offset + 28, 0x7fffffff, true)
    const r1 = parseEventLog(big)
    expect(Either.isLeft(r1) && { i: r1.left.eventIndex, f: r1.left.field, o: r1.left.offset }).toEqual({ i: 2, f: "EventSize", o: third.offset + 28 })
    const pcr = new Uint8Array(legacyLog)
    new DataView(pcr.buffer).setUint32(third.offset, 30, true)
    const r2 = parseEventLog(pcr)
    expect(Either.isLeft(r2) && { i: r2.left.eventIndex, f: r2.left.field, o: r2.left.offset }).toEqual({ i: 2, f: "PCRIndex", o: third.offset })
  })
})

describe("legacy log codec properties", () => {
  it("round-trips random legacy logs, with and without the Spec ID Event02 header; replay equals a naive sha1 extend loop", () => {
    fc.assert(
      fc.property(fc.array(eventArb, { minLength: 1, maxLength: 30 }), fc.boolean(), (events, header) => {
        const log = Either.getOrThrow(parseEventLog(encodeLegacyEventLog(events, { specIdHeader: header })))
        expect(log.format).toBe("sha1")
        const got = log.events.slice(header ? 1 : 0)
        expect(got.map((e) => [e.pcr, e.type, toHex(e.digests[0]!.digest), toHex(e.data)])).toEqual(events.map((e) => [e.pcr, e.type, toHex(e.digest), toHex(e.data)]))
        const want = naiveSha1(events)
        for (const [p, hex] of sha1Bank(replayPcrs(log))) expect(hex).toBe(want.get(p) ?? "00".repeat(20))
      }),
      { numRuns: 150 }
    )
  })

  it("turns every truncation of the legacy vector into a typed error naming the event, or the log of the events before the cut", () => {
    const boundaries = new Set(Either.getOrThrow(parseEventLog(legacyLog)).events.map((e) => e.offset))
    fc.assert(
      fc.property(fc.integer({ min: 1, max: legacyLog.length - 1 }), (cut) => {
        const r = parseEventLog(legacyLog.subarray(0, cut))
        if (boundaries.has(cut)) expect(Either.isRight(r)).toBe(true)
        else {
          expect(Either.isLeft(r) && r.left._tag).toBe("EventLogParseError")
          if (Either.isLeft(r)) expect(r.left.offset).toBeLessThanOrEqual(cut)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("turns random byte flips of the legacy vector into a typed error or a log, never an exception; a flipped digest byte changes the replay", () => {
    const original = sha1Bank(replayPcrs(Either.getOrThrow(parseEventLog(legacyLog))))
    const digestBytes = new Set(Either.getOrThrow(parseEventLog(legacyLog)).events.filter((e) => e.type !== EV.NO_ACTION).flatMap((e) => Array.from({ length: 20 }, (_, i) => e.offset + 8 + i)))
    fc.assert(
      fc.property(fc.integer({ min: 0, max: legacyLog.length - 1 }), fc.integer({ min: 1, max: 255 }), (pos, mask) => {
        const bytes = new Uint8Array(legacyLog)
        bytes[pos]! ^= mask
        const r = parseEventLog(bytes)
        expect(Either.isRight(r) || r.left._tag === "EventLogParseError").toBe(true)
        const input = parseEventLogInput(bytes)
        expect(Either.isRight(input) || input.left._tag === "EventLogParseError").toBe(true)
        if (digestBytes.has(pos) && Either.isRight(r)) expect(sha1Bank(replayPcrs(r.right))).not.toEqual(original)
      }),
      { numRuns: 300 }
    )
  })
})
