/**
 * Measurements of the machine the agent runs on: the kernel's IMA ascii list and the firmware's
 * binary event log from securityfs (paths configurable). The IMA list is indexed incrementally,
 * since it only grows, so "from entry n" does not rescan the whole file on every quote.
 */
import { readFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import * as os from "node:os"
import { Clock, Effect, Layer, Option } from "effect"
import { ImaLines } from "./imaList.js"
import { MeasurementError, MeasurementSource } from "./MeasurementSource.js"

export interface SystemMeasurementsOptions {
  readonly imaPath?: string
  readonly bootLogPath?: string
}

export const defaultImaPath = "/sys/kernel/security/ima/ascii_runtime_measurements"
export const defaultBootLogPath = "/sys/kernel/security/tpm0/binary_bios_measurements"

const isMissing = (e: unknown) =>
  typeof e === "object" && e !== null && "code" in e && (e.code === "ENOENT" || e.code === "EACCES" || e.code === "ENOTDIR")

const readOptional = (path: string): Effect.Effect<Option.Option<Uint8Array>, MeasurementError> =>
  Effect.tryPromise({
    try: () =>
      readFile(path).then(
        (b): Option.Option<Uint8Array> => Option.some(new Uint8Array(b)),
        (e) => (isMissing(e) ? Option.none<Uint8Array>() : Promise.reject(e))
      ),
    catch: (e) => new MeasurementError({ source: path, message: e instanceof Error ? e.message : String(e) })
  })

/**
 * When this machine booted, in epoch seconds: the kernel's `btime` from /proc/stat when there is
 * one, the same number for every process of one boot; otherwise now − uptime. The verifier takes
 * another boot time for a reboot and reads the IMA list again from entry 0, so a restarted agent
 * must say the same second: now − uptime is read at two moments and os.uptime() is rounded to
 * 10 ms, so two processes of one boot straddle a second boundary about once in a hundred.
 */
export const bootTimeOf = (procStat: string | undefined, nowMs: number, uptimeSeconds: number): number => {
  const btime = procStat === undefined ? null : /^btime (\d+)$/m.exec(procStat)
  return btime !== null ? Number(btime[1]) : Math.floor(nowMs / 1000 - uptimeSeconds)
}

const procStat = (): string | undefined => {
  try {
    return readFileSync("/proc/stat", "utf8")
  } catch {
    return undefined
  }
}

export const layer = (options: SystemMeasurementsOptions = {}): Layer.Layer<MeasurementSource> =>
  Layer.effect(
    MeasurementSource,
    Effect.gen(function*() {
      const imaPath = options.imaPath ?? defaultImaPath
      const bootLogPath = options.bootLogPath ?? defaultBootLogPath
      const lines = new ImaLines()
      const lock = yield* Effect.makeSemaphore(1)
      const now = yield* Clock.currentTimeMillis
      const bootTime = bootTimeOf(yield* Effect.sync(procStat), now, os.uptime())
      return MeasurementSource.of({
        description: `this machine (${imaPath}, ${bootLogPath})`,
        imaList: (fromEntry) =>
          lock.withPermits(1)(
            readOptional(imaPath).pipe(
              Effect.map(Option.map((bytes) => {
                lines.refresh(Buffer.from(bytes).toString("utf8"))
                return lines.slice(fromEntry)
              }))
            )
          ),
        bootLog: readOptional(bootLogPath).pipe(Effect.map(Option.filter((b) => b.length > 0))),
        bootTime: Effect.succeed(bootTime)
      })
    })
  )
