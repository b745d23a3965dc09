/**
 * A simulated machine: a TCG2 boot log for PCRs 0–9 and an ima-ng list (boot_aggregate first) that
 * it extends into the Tpm at start, exactly as firmware and the kernel would, so quotes from the
 * simulator or swtpm replay against the logs it serves. `measure` records a file at run time
 * ("this machine ran /usr/bin/evil"): list line first, then PCR 10, as the kernel orders them.
 */
import { createHash } from "node:crypto"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { encodeImaNg } from "../../ima/encode.js"
import { type HashAlg, Tpm, type TpmError } from "../../tpm/Tpm.js"
import { encodeEventLog, simulatedBootEvents } from "./bootLog.js"
import { ImaLines } from "./imaList.js"
import { MeasurementError, MeasurementSource } from "./MeasurementSource.js"

export interface SimulatedFile {
  readonly path: string
  readonly content: Uint8Array | string
}

export interface SimulatedMachineOptions {
  /** Names the machine in logs and in its kernel command line (so PCR 8 differs per machine). */
  readonly name: string
  /** PCR banks to log and extend; the Tpm must have them. Default sha1 and sha256. */
  readonly banks?: ReadonlyArray<HashAlg>
  /** Files measured after boot_aggregate. Default: a handful of usual system files. */
  readonly files?: ReadonlyArray<SimulatedFile>
  /** Further synthetic entries `/usr/lib/sim/file-<n>` after the files (large lists for benchmarks). */
  readonly extraEntries?: number
}

export interface SimulatedMachineShape {
  readonly name: string
  /**
   * Records a file measurement: `contentOrDigest` is the content, or "sha256:<hex>" for a digest;
   * with the file's signature (evmctl's) the entry is ima-sig.
   */
  readonly measure: (path: string, contentOrDigest: Uint8Array | string, signature?: Uint8Array) => Effect.Effect<void, MeasurementError>
  readonly entries: Effect.Effect<number>
  readonly bootLog: Uint8Array
}

export class SimulatedMachine extends Context.Tag("attest/agent/SimulatedMachine")<SimulatedMachine, SimulatedMachineShape>() {}

export const defaultFiles: ReadonlyArray<SimulatedFile> = [
  { path: "/usr/lib/systemd/systemd", content: "systemd 252" },
  { path: "/usr/lib/x86_64-linux-gnu/libc.so.6", content: "glibc 2.36" },
  { path: "/usr/bin/bash", content: "GNU bash 5.2" },
  { path: "/usr/sbin/sshd", content: "OpenSSH 9.2" },
  { path: "/usr/bin/cat", content: "coreutils 9.1 cat" }
]

const digestOf = (contentOrDigest: Uint8Array | string): Uint8Array => {
  if (typeof contentOrDigest === "string") {
    const m = /^sha256:([0-9a-fA-F]{64})$/.exec(contentOrDigest)
    if (m) return new Uint8Array(Buffer.from(m[1], "hex"))
  }
  return new Uint8Array(createHash("sha256").update(contentOrDigest).digest())
}

const fail = (message: string) => (e: TpmError) => new MeasurementError({ source: "simulated machine", message: `${message}: ${e.message}` })

const make = (options: SimulatedMachineOptions) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const banks = options.banks ?? ["sha1", "sha256"]
    const pcrs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]

    // The logs describe a boot from reset: the PCRs must still be at zero.
    const before = yield* tpm.pcrRead([{ hash: "sha256", pcrs }]).pipe(Effect.mapError(fail("reading PCRs")))
    const used = pcrs.filter((p) => before[0]?.values.get(p)?.some((b) => b !== 0))
    if (used.length > 0) {
      return yield* new MeasurementError({
        source: "simulated machine",
        message: `PCRs ${used.join(", ")} already hold measurements; a simulated machine needs a TPM fresh from reset`
      })
    }

    const boot = encodeEventLog(simulatedBootEvents(options.name), banks)
    for (const e of boot.extends) {
      yield* tpm.pcrExtend(e.pcr, e.digests).pipe(Effect.mapError(fail(`extending PCR ${e.pcr}`)))
    }

    const lines = new ImaLines()
    const record = (path: string, fileDigest: Uint8Array, signature?: Uint8Array) => {
      const e = encodeImaNg(fileDigest, path, signature === undefined ? { banks } : { banks, signature })
      lines.push(e.line)
      return tpm.pcrExtend(10, e.templateHashes).pipe(Effect.mapError(fail("extending PCR 10")))
    }

    // boot_aggregate as the kernel (>= 5.8) computes it with a sha256 bank: H(PCR0 ‖ … ‖ PCR9).
    const booted = yield* tpm.pcrRead([{ hash: "sha256", pcrs: pcrs.slice(0, 10) }]).pipe(Effect.mapError(fail("reading PCRs")))
    const aggregate = createHash("sha256")
    for (const p of pcrs.slice(0, 10)) aggregate.update(booted[0]?.values.get(p) ?? new Uint8Array(32))
    yield* record("boot_aggregate", new Uint8Array(aggregate.digest()))
    for (const f of options.files ?? defaultFiles) yield* record(f.path, digestOf(f.content))
    for (let i = 0; i < (options.extraEntries ?? 0); i++) {
      yield* record(`/usr/lib/sim/file-${i}`, digestOf(`synthetic file ${i}`))
    }

    const bootTime = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const lock = yield* Effect.makeSemaphore(1)
    yield* Effect.logInfo(`simulated machine ${options.name}: booted with ${boot.extends.length} boot events and ${lines.length} IMA entries`)

    const machine: SimulatedMachineShape = {
      name: options.name,
      bootLog: boot.log,
      entries: Effect.sync(() => lines.length),
      measure: (path, contentOrDigest, signature) =>
        lock.withPermits(1)(
          Effect.suspend(() => record(path.replace(/\s/g, "_"), digestOf(contentOrDigest), signature)).pipe(
            Effect.tap(() => Effect.logInfo(`simulated machine ${options.name}: measured ${path}`))
          )
        )
    }
    const source = MeasurementSource.of({
      description: `simulated machine ${options.name}`,
      imaList: (fromEntry) => Effect.sync(() => Option.some(lines.slice(fromEntry))),
      bootLog: Effect.succeed(Option.some(boot.log)),
      bootTime: Effect.succeed(bootTime)
    })
    return Context.make(SimulatedMachine, machine).pipe(Context.add(MeasurementSource, source))
  })

/** Both the SimulatedMachine and the MeasurementSource it backs; needs the Tpm it extends. */
export const layer = (options: SimulatedMachineOptions): Layer.Layer<SimulatedMachine | MeasurementSource, MeasurementError, Tpm> =>
  Layer.effectContext(make(options))
