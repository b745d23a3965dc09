import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Either, FastCheck as fc } from "effect"
import { encodeEventLog, type EventToEncode } from "../../src/boot/encode.js"
import { evaluateMeasuredBoot } from "../../src/boot/evaluate.js"
import { parseEventLog, parseEventLogInput } from "../../src/boot/eventLog.js"
import { EV } from "../../src/boot/eventTypes.js"
import { examplePolicy } from "../../src/boot/examplePolicy.js"
import type { MbPolicy } from "../../src/boot/policy.js"
import { replayPcrs } from "../../src/boot/replay.js"
import { createRefState } from "../../src/boot/createRefState.js"
import type { HashAlg } from "../../src/tpm/hashAlg.js"
import { gceLog, parsed, secureBootLog } from "./support.js"

const pcrsOnly: MbPolicy = { name: "pcrs-only", relevantPcrs: new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]), evaluate: () => "" }
const isTypedParseError = (r: Either.Either<unknown, { readonly _tag: string; readonly offset: number }>, len: number) =>
  Either.isRight(r) || (r.left._tag === "EventLogParseError" && r.left.offset >= 0 && r.left.offset <= len)

const BANKS: ReadonlyArray<HashAlg> = ["sha1", "sha256", "sha384"]
const eventArb = fc.record({
  pcr: fc.integer({ min: 0, max: 23 }),
  type: fc.constantFrom(EV.IPL, EV.SEPARATOR, EV.EFI_ACTION, EV.POST_CODE, EV.NONHOST_INFO, EV.S_CRTM_CONTENTS, 0x1234),
  data: fc.uint8Array({ maxLength: 64 })
})

describe("event log codec properties", () => {
  it("round-trips random logs: same events, digests and data; replay equals a naive extend loop", () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 30 }), (raw) => {
        const events: Array<EventToEncode> = raw.map((e) => ({ ...e, digests: BANKS.map((b) => createHash(b).update(e.data).digest()) }))
        const log = Either.getOrThrow(parseEventLog(encodeEventLog(BANKS, events)))
        expect(log.events.length).toBe(events.length + 1)
        log.events.slice(1).forEach((e, i) => {
          expect(e.pcr).toBe(events[i]!.pcr)
          expect(e.type).toBe(events[i]!.type)
          expect(Buffer.from(e.data).equals(Buffer.from(events[i]!.data))).toBe(true)
          expect(e.digests.map((d) => d.alg)).toEqual(BANKS)
        })
        const naive = new Array(24).fill(0).map(() => Buffer.alloc(32))
        for (const e of events) naive[e.pcr] = createHash("sha256").update(naive[e.pcr]!).update(e.digests[1]!).digest()
        const sha256 = replayPcrs(log).find((b) => b.hash === "sha256")!
        for (const [p, v] of sha256.values) expect(Buffer.from(v).equals(naive[p]!)).toBe(true)
      }),
      { numRuns: 100 }
    )
  })

  it("turns random byte strings into typed errors or logs, never exceptions", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        expect(isTypedParseError(parseEventLog(bytes), bytes.length)).toBe(true)
        expect(isTypedParseError(parseEventLogInput(bytes), bytes.length)).toBe(true)
      }),
      { numRuns: 500 }
    )
  })

  it("turns random bytes behind a valid Spec ID header into typed errors, never exceptions", () => {
    const header = encodeEventLog(BANKS, [])
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (tail) => {
        const bytes = new Uint8Array([...header, ...tail])
        const r = parseEventLog(bytes)
        expect(isTypedParseError(r, bytes.length)).toBe(true)
        if (Either.isLeft(r)) expect(r.left.eventIndex).toBeGreaterThanOrEqual(1)
      }),
      { numRuns: 500 }
    )
  })

  it("never accepts a truncated real log against the original quote: typed error or a PCR failure", () => {
    for (const original of [gceLog(), secureBootLog()]) {
      const quoted = replayPcrs(parsed(original))
      const measured = parsed(original).events.filter((e) => e.type !== EV.NO_ACTION)
      const lastMeasuredEnd = measured[measured.length - 1]!.offset
      fc.assert(
        fc.property(fc.integer({ min: 0, max: original.length - 1 }), (cut) => {
          const bytes = original.subarray(0, cut)
          const r = parseEventLog(bytes)
          expect(isTypedParseError(r, bytes.length)).toBe(true)
          const evaluation = evaluateMeasuredBoot({ log: bytes, quotedPcrs: quoted, refstate: { any: 1 } }, pcrsOnly)
          if (cut <= lastMeasuredEnd) expect(evaluation.failures.length).toBeGreaterThan(0)
        }),
        { numRuns: 300 }
      )
    }
  })

  it("never accepts a real log with a flipped digest byte; any flipped byte ends in a typed error or a log, never an exception", () => {
    const original = secureBootLog()
    const log = parsed(original)
    const quoted = replayPcrs(log)
    const refstate = Either.getOrThrow(createRefState(log)).refstate
    // Byte ranges of the measured digests: a flip there must change the replay.
    const digestBytes = new Set<number>()
    for (const e of log.events.slice(1)) {
      if (e.type === EV.NO_ACTION) continue
      let at = e.offset + 12
      for (const d of e.digests) {
        at += 2
        for (let i = 0; i < d.digest.length; i++) digestBytes.add(at + i)
        at += d.digest.length
      }
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: original.length - 1 }), fc.integer({ min: 1, max: 255 }), (pos, mask) => {
        const bytes = new Uint8Array(original)
        bytes[pos]! ^= mask
        const r = parseEventLog(bytes)
        expect(isTypedParseError(r, bytes.length)).toBe(true)
        const evaluation = evaluateMeasuredBoot({ log: bytes, quotedPcrs: quoted, refstate }, examplePolicy)
        if (digestBytes.has(pos)) expect(evaluation.failures.length).toBeGreaterThan(0)
      }),
      { numRuns: 400 }
    )
  })
})
