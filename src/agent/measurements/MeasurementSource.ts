/**
 * The `MeasurementSource` port: where the agent gets the IMA runtime list and the UEFI boot log it
 * returns with a quote. Two layers: `SystemMeasurements` (the kernel's securityfs files) and
 * `SimulatedMachine` (a synthetic machine that extends its measurements into the Tpm).
 */
import { Context, Data, type Effect, type Option } from "effect"

/** Part of the IMA ascii list from line `entry` (Keylime's `ima_measurement_list_entry`). */
export interface ImaSlice {
  readonly entry: number
  readonly list: string
}

export class MeasurementError extends Data.TaggedError("MeasurementError")<{
  /** The file or the measurement step, e.g. "/sys/kernel/security/ima/ascii_runtime_measurements". */
  readonly source: string
  readonly message: string
}> {}

export interface MeasurementSourceShape {
  readonly description: string
  /**
   * The IMA list from line `fromEntry`, with Keylime's offset rules: `fromEntry` equal to the line
   * count gives an empty list; beyond it, the whole list from entry 0. None when there is no IMA list.
   */
  readonly imaList: (fromEntry: number) => Effect.Effect<Option.Option<ImaSlice>, MeasurementError>
  /** The binary TCG2 event log, None when none is readable. */
  readonly bootLog: Effect.Effect<Option.Option<Uint8Array>, MeasurementError>
  /** When the machine booted, in seconds since the epoch (the quote's `boottime`). */
  readonly bootTime: Effect.Effect<number>
}

export class MeasurementSource extends Context.Tag("attest/agent/MeasurementSource")<
  MeasurementSource,
  MeasurementSourceShape
>() {}
