/**
 * The simulator's persistent state: what a restarted agent needs to keep its TPM identity. The EK
 * keys are derivable from the seed but kept (with their certificates) so a restart costs nothing.
 * JSON, decoded with Schema, written with owner-only permissions (it holds the seed and EK keys).
 */
import { FileSystem } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { TpmError } from "../Tpm.js"

const Hex = Schema.String.pipe(Schema.pattern(/^([0-9a-f]{2})*$/))
const Base64 = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9+/]*={0,2}$/))
const Count = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

const EkState = Schema.Struct({
  /** PKCS#8 DER, base64. */
  privateKey: Base64,
  /** EK certificate DER, base64. */
  certificate: Base64
})

export const SimulatorState = Schema.Struct({
  version: Schema.Literal(1),
  seed: Hex,
  resetCount: Count,
  restartCount: Count,
  /** TPM clock (ms) when the state was last written. */
  clockMs: Count,
  /** AKs created so far (each AK's key is derived from the seed and this counter). */
  akCounter: Count,
  ek: Schema.Struct({ rsa: EkState, ecc: EkState }),
  /** The manufacturer CA that issued the EK certificates (PEM). */
  manufacturerCa: Schema.String
})
export type SimulatorState = typeof SimulatorState.Type

const decode = Schema.decodeUnknown(Schema.parseJson(SimulatorState))
const encode = Schema.encode(Schema.parseJson(SimulatorState, { space: 2 }))

const stateError = (message: string, detail?: string) =>
  new TpmError(detail === undefined ? { operation: "state", message } : { operation: "state", message, detail })

export const loadState = (file: string): Effect.Effect<Option.Option<SimulatorState>, TpmError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const exists = yield* fs.exists(file).pipe(Effect.mapError((e) => stateError(`cannot access ${file}`, e.message)))
    if (!exists) return Option.none()
    const text = yield* fs.readFileString(file).pipe(Effect.mapError((e) => stateError(`cannot read ${file}`, e.message)))
    return Option.some(
      yield* decode(text).pipe(Effect.mapError((e) => stateError(`${file} is not a simulator state file`, e.message)))
    )
  })

/** Writes via a temp file and rename, mode 0600, so a crash never leaves half a state file. */
export const saveState = (file: string, state: SimulatorState): Effect.Effect<void, TpmError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* encode(state).pipe(Effect.mapError((e) => stateError("cannot encode the state", e.message)))
    const tmp = `${file}.tmp`
    yield* fs.writeFileString(tmp, text, { mode: 0o600 }).pipe(
      Effect.zipRight(fs.chmod(tmp, 0o600)),
      Effect.zipRight(fs.rename(tmp, file)),
      Effect.mapError((e) => stateError(`cannot write ${file}`, e.message))
    )
  })
