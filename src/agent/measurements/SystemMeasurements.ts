/**
 * Measurements of the machine the agent runs on: the kernel's IMA ascii list and the firmware's
 * binary event log from securityfs (paths configurable). The IMA list is indexed incrementally,
 * since it only grows, so "from entry n" does not rescan the whole file on every quote.
 */
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

export const layer = (options: SystemMeasurementsOptions = {}): Layer.Layer<MeasurementSource> =>
  Layer.effect(
    MeasurementSource,
    Effect.gen(function*() {
      const imaPath = options.imaPath ?? defaultImaPath
      const bootLogPath = options.bootLogPath ?? defaultBootLogPath
      const lines = new ImaLines()
      const lock = yield* Effect.makeSemaphore(1)
      const now = yield* Clock.currentTimeMillis
      const bootTime = Math.floor(now / 1000 - os.uptime())
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
