/**
 * One Tpm operation through tpm2-tools: serialized per TPM (the direct swtpm/mssim TCTI has no
 * resource manager, so two callers would trample each other's handles), in a fresh temp dir, under
 * a timeout, and always followed by flushing transient objects and sessions (swtpm has 3 slots).
 * The first operation of a process on a TPM flushes before it too: a process killed mid-operation
 * (an agent restarted without a reboot) leaves its objects loaded where no resource manager
 * flushes them, and three of them make every later key creation fail ("out of memory for object
 * contexts").
 */
import type { CommandExecutor } from "@effect/platform"
import { FileSystem } from "@effect/platform"
import { Duration, Effect } from "effect"
import { TpmError } from "../Tpm.js"
import { runTool, type ToolContext } from "./run.js"

export interface Tpm2ToolsConfig {
  /** TCTI for tpm2-tools; default the kernel resource manager `device:/dev/tpmrm0`. */
  readonly tcti?: string
  /** Parent of the per-call temp dirs; default the OS temp dir. */
  readonly workDir?: string
  /** Limit for one Tpm operation (all its tool runs); default 60 s. */
  readonly timeout?: Duration.DurationInput
}

export const DEFAULT_TCTI = "device:/dev/tpmrm0"

// One permit per TPM (keyed by TCTI) for the whole process, shared by every layer instance.
const semaphores = new Map<string, Effect.Semaphore>()
const semaphoreFor = (tcti: string): Effect.Semaphore => {
  let s = semaphores.get(tcti)
  if (s === undefined) {
    s = Effect.unsafeMakeSemaphore(1)
    semaphores.set(tcti, s)
  }
  return s
}

export type CallEnv = CommandExecutor.CommandExecutor | FileSystem.FileSystem

/** TPMs (by TCTI) this process has flushed before its first operation on them. */
const flushedAtFirstUse = new Set<string>()

/** Flushes every transient object and session; a failure here is logged, not hidden. */
const flushAll = (ctx: ToolContext, when: string) =>
  Effect.forEach(["-t", "-s"], (flag) =>
    runTool(ctx, "tpm2_flushcontext", [flag]).pipe(
      Effect.catchAll((e) => Effect.logWarning(`tpm2_flushcontext ${flag} failed ${when} ${ctx.operation}`, e.detail))
    ), { discard: true })

export const makeCaller = (config: Tpm2ToolsConfig) => {
  const tcti = config.tcti ?? DEFAULT_TCTI
  const timeout = Duration.decode(config.timeout ?? Duration.seconds(60))
  const semaphore = semaphoreFor(tcti)
  return <A, R>(
    operation: string,
    body: (ctx: ToolContext) => Effect.Effect<A, TpmError, R>
  ): Effect.Effect<A, TpmError, R | CallEnv> =>
    Effect.scoped(
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({
          prefix: "attest-tpm-",
          ...(config.workDir === undefined ? {} : { directory: config.workDir })
        }).pipe(
          Effect.mapError((e) => new TpmError({ operation, message: "cannot create a work dir", detail: e.message }))
        )
        const ctx: ToolContext = { tcti, dir, operation }
        if (!flushedAtFirstUse.has(tcti)) {
          yield* flushAll(ctx, "before")
          flushedAtFirstUse.add(tcti)
        }
        return yield* body(ctx).pipe(Effect.ensuring(flushAll(ctx, "after")))
      })
    ).pipe(
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => new TpmError({ operation, message: `timed out after ${Duration.format(timeout)} (TCTI ${tcti})` })
      }),
      semaphore.withPermits(1)
    )
}
