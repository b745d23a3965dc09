/** The two MeasurementSource layers: securityfs-style files, and a simulated machine over the TPM simulator. */
import { describe, expect, it } from "@effect/vitest"
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Exit, Layer, Option } from "effect"
import { layer as machineLayer, SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { MeasurementSource } from "../../src/agent/measurements/MeasurementSource.js"
import { bootTimeOf, layer as systemLayer } from "../../src/agent/measurements/SystemMeasurements.js"
import { parseEventLog, replayPcrs } from "../../src/boot/index.js"
import { replayPcr10 } from "../../src/ima/replay.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { vectorPath } from "../support/vectors.js"

const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString("hex")

describe("SystemMeasurements", () => {
  it.effect("reads the IMA list from an offset as it grows, and the boot log; missing files are None", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-sysm-"))
      const ima = join(dir, "ascii_runtime_measurements")
      const log = join(dir, "binary_bios_measurements")
      const text = readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/ima/ascii_runtime_measurements"), "utf8")
      const lines = text.split("\n").filter((l) => l !== "")
      writeFileSync(ima, lines.slice(0, 10).join("\n") + "\n")
      writeFileSync(log, readFileSync(vectorPath("rust-keylime/keylime/test-data/uefi_log.bin")))
      const source = yield* MeasurementSource.pipe(Effect.provide(systemLayer({ imaPath: ima, bootLogPath: log })))
      expect(Option.getOrThrow(yield* source.imaList(0)).list.split("\n")).toHaveLength(11)
      appendFileSync(ima, lines.slice(10, 15).join("\n") + "\n")
      expect(Option.getOrThrow(yield* source.imaList(10))).toEqual({ entry: 10, list: lines.slice(10, 15).join("\n") + "\n" })
      expect(Option.getOrThrow(yield* source.bootLog).length).toBe(48946)
      const none = yield* MeasurementSource.pipe(Effect.provide(systemLayer({ imaPath: join(dir, "no"), bootLogPath: join(dir, "no") })))
      expect(Option.isNone(yield* none.imaList(0))).toBe(true)
      expect(Option.isNone(yield* none.bootLog)).toBe(true)
      rmSync(dir, { recursive: true, force: true })
    }))
})

describe("the boot time a system agent reports", () => {
  // two processes of one boot: now and uptime (os.uptime() rounded to 10 ms) read a few ms apart,
  // on either side of a second boundary
  const before = { nowMs: 1_000_000_999, uptime: 100.0 }
  const after = { nowMs: 1_000_001_503, uptime: 100.5 }

  it("is the kernel's btime, the same for every process of one boot (now − uptime is not)", () => {
    const stat = "cpu  1 2 3\nintr 5\nbtime 999900\nprocesses 42\n"
    expect([bootTimeOf(stat, before.nowMs, before.uptime), bootTimeOf(stat, after.nowMs, after.uptime)]).toEqual([999900, 999900])
    // without /proc/stat (not Linux), now − uptime: here one boot gives two seconds
    expect([bootTimeOf(undefined, before.nowMs, before.uptime), bootTimeOf(undefined, after.nowMs, after.uptime)]).toEqual([999900, 999901])
  })

  it.effect.skipIf(!existsSync("/proc/stat"))("of two sources made apart is this machine's btime", () =>
    Effect.gen(function*() {
      const btime = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1])
      const first = yield* MeasurementSource.pipe(Effect.provide(systemLayer()))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      const second = yield* MeasurementSource.pipe(Effect.provide(systemLayer()))
      expect([yield* first.bootTime, yield* second.bootTime]).toEqual([btime, btime])
    }))
})

describe("SimulatedMachine", () => {
  it.effect("extends its boot log and IMA list into the TPM so both replay to the PCRs", () =>
    Effect.gen(function*() {
      const tpm = yield* Tpm
      const machine = yield* SimulatedMachine
      const source = yield* MeasurementSource
      yield* machine.measure("/usr/bin/evil", new TextEncoder().encode("evil"))
      const pcrs = (yield* tpm.pcrRead([{ hash: "sha1", pcrs: [0, 1, 4, 7, 8, 9, 10] }, { hash: "sha256", pcrs: [0, 1, 4, 7, 8, 9, 10] }]))
      const replayed = replayPcrs(Either.getOrThrow(parseEventLog(Option.getOrThrow(yield* source.bootLog))))
      for (const bank of ["sha1", "sha256"] as const) {
        const quoted = pcrs.find((b) => b.hash === bank)!.values
        const fromLog = replayed.find((b) => b.hash === bank)!.values
        for (const p of [0, 1, 4, 7, 8, 9]) expect(hex(fromLog.get(p))).toBe(hex(quoted.get(p)))
        const ima = Either.getOrThrow(replayPcr10(Option.getOrThrow(yield* source.imaList(0)).list, [bank]))
        expect(hex(ima[bank])).toBe(hex(quoted.get(10)))
      }
      expect(yield* machine.entries).toBe(7)
    }).pipe(Effect.provide(machineLayer({ name: "m" }).pipe(Layer.provideMerge(TpmSimulator.layer({ seed: "machine-test" }))))))

  it.effect("refuses a TPM whose PCRs already hold measurements", () =>
    Effect.gen(function*() {
      const tpm = yield* Tpm
      yield* tpm.pcrExtend(10, [{ hash: "sha256", digest: new Uint8Array(32).fill(1) }])
      const exit = yield* Effect.exit(Layer.build(machineLayer({ name: "late" })).pipe(Effect.scoped))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toContain("PCRs 10 already hold measurements")
    }).pipe(Effect.provide(TpmSimulator.layer({ seed: "machine-test-2" }))))
})
