/**
 * Running one tpm2-tools process: the TCTI goes in TPM2TOOLS_TCTI, stdout and stderr are collected
 * in full, and a non-zero exit becomes a `TpmError` naming the tool and carrying its stderr.
 * The process lives in a scope, so an interrupted call (timeout) kills it.
 */
import { Command, CommandExecutor, FileSystem } from "@effect/platform"
import { Chunk, Effect, Stream } from "effect"
import { concatBytes } from "../bytes.js"
import { TpmError } from "../Tpm.js"

export interface ToolContext {
  readonly tcti: string
  /** Working directory of this call (files the tools read and write). */
  readonly dir: string
  /** The Tpm operation, named in errors. */
  readonly operation: string
}

export interface ToolOutput {
  readonly stdout: Uint8Array
  readonly stderr: string
}

const collect = <E>(stream: Stream.Stream<Uint8Array, E>): Effect.Effect<Uint8Array, E> =>
  Stream.runCollect(stream).pipe(
    Effect.map((chunks) => concatBytes(...Chunk.toReadonlyArray(chunks)))
  )

const decoder = new TextDecoder()

/** Runs `tool args…` in the call's directory; fails with TpmError on a spawn failure or non-zero exit. */
export const runTool = (
  ctx: ToolContext,
  tool: string,
  args: ReadonlyArray<string>,
  stdin?: Uint8Array
): Effect.Effect<ToolOutput, TpmError, CommandExecutor.CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function*() {
      let command = Command.make(tool, ...args).pipe(
        Command.workingDirectory(ctx.dir),
        Command.env({ TPM2TOOLS_TCTI: ctx.tcti })
      )
      if (stdin !== undefined) command = Command.stdin(command, Stream.make(stdin))
      const proc = yield* Command.start(command)
      const [stdout, stderr, exit] = yield* Effect.all(
        [collect(proc.stdout), collect(proc.stderr), proc.exitCode],
        { concurrency: 3 }
      )
      const err = decoder.decode(stderr)
      if (exit !== 0) {
        // the tool's TPM response code is in its ERROR lines: said with the message, which is what a failed start prints
        const errors = err.split("\n").filter((l) => l.startsWith("ERROR"))
        const why = errors.find((l) => l.includes(" - ")) ?? errors[0]
        return yield* new TpmError({
          operation: ctx.operation,
          message: `${tool} exited with ${exit}${why === undefined ? "" : ` (${why.replace(/^ERROR:\s*/, "")})`}`,
          detail: err.trim()
        })
      }
      return { stdout, stderr: err }
    })
  ).pipe(
    Effect.catchTag("SystemError", "BadArgument", (cause) =>
      Effect.fail(new TpmError({ operation: ctx.operation, message: `cannot run ${tool}`, detail: cause.message }))
    )
  )

/** Reads a file a tool wrote into the call's directory. */
export const readOutput = (ctx: ToolContext, file: string): Effect.Effect<Uint8Array, TpmError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFile(`${ctx.dir}/${file}`)).pipe(
    // A plain Uint8Array that owns its bytes (the platform hands back a Buffer).
    Effect.map((bytes) => new Uint8Array(bytes)),
    Effect.mapError(
      (cause) => new TpmError({ operation: ctx.operation, message: `missing tool output ${file}`, detail: cause.message })
    )
  )

/** Writes an input file for a tool into the call's directory. */
export const writeInput = (
  ctx: ToolContext,
  file: string,
  data: Uint8Array
): Effect.Effect<void, TpmError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.writeFile(`${ctx.dir}/${file}`, data)).pipe(
    Effect.mapError(
      (cause) => new TpmError({ operation: ctx.operation, message: `cannot write ${file}`, detail: cause.message })
    )
  )
