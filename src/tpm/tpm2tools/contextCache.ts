/**
 * Saved contexts (ContextSave blobs) of loaded AKs and their EK, kept between calls. Reloading an AK
 * from scratch takes six tool runs (createek, session, policysecret, load, two flushes); a saved
 * object context can be loaded again by any tool until the next TPM Reset, so later calls pass the
 * cached files and need only the operation itself. A context the TPM refuses (after a reset) is
 * dropped and the AK reloaded once.
 */
import { FileSystem } from "@effect/platform"
import { Effect, type Scope } from "effect"
import { toHex } from "../bytes.js"
import type { Ak } from "../Tpm.js"
import { TpmError } from "../Tpm.js"
import { loadAkInto } from "./keys.js"
import { runTool, type ToolContext } from "./run.js"

export interface LoadedContexts {
  /** Absolute paths of the saved AK and EK contexts. */
  readonly ak: string
  readonly ek: string
}

const MAX_ENTRIES = 16

/** The TPM refused a saved context (TPM Reset, or another TPM behind the same TCTI). */
const isStaleContext = (e: TpmError): boolean => e.detail !== undefined && /ContextLoad/.test(e.detail)

export const makeContextCache = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "attest-tpm-contexts-" })
  const entries = new Map<string, LoadedContexts>()
  let counter = 0

  const keyOf = (ak: Ak) => `${ak.saved.ekAlg}:${toHex(ak.saved.public)}:${toHex(ak.saved.private)}`

  const load = (ctx: ToolContext, ak: Ak) =>
    Effect.gen(function*() {
      yield* loadAkInto(ctx, ak)
      const n = counter++
      const paths = { ak: `${dir}/${n}-ak.ctx`, ek: `${dir}/${n}-ek.ctx` }
      yield* Effect.all([fs.copyFile(`${ctx.dir}/ak.ctx`, paths.ak), fs.copyFile(`${ctx.dir}/ek.ctx`, paths.ek)]).pipe(
        Effect.mapError((e) => new TpmError({ operation: ctx.operation, message: "cannot keep the AK context", detail: e.message }))
      )
      if (entries.size >= MAX_ENTRIES) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
      entries.set(keyOf(ak), paths)
      return paths
    })

  /** Runs `use` with the AK (and its EK) loadable from saved contexts. */
  const withAk = <A, R>(
    ctx: ToolContext,
    ak: Ak,
    use: (paths: LoadedContexts) => Effect.Effect<A, TpmError, R>
  ) =>
    Effect.gen(function*() {
      const cached = entries.get(keyOf(ak))
      if (cached !== undefined) {
        const first = yield* Effect.either(use(cached))
        if (first._tag === "Right") return first.right
        if (!isStaleContext(first.left)) return yield* first.left
        entries.delete(keyOf(ak))
        yield* runTool(ctx, "tpm2_flushcontext", ["-t"])
      }
      return yield* use(yield* load(ctx, ak))
    })

  /** Loads the AK now (checks the blob belongs to this TPM) and caches its contexts. */
  const loadNow = (ctx: ToolContext, ak: Ak) => Effect.as(load(ctx, ak), ak)

  return { withAk, loadNow }
})

export type ContextCache = Effect.Effect.Success<typeof makeContextCache>
export type ContextCacheEnv = FileSystem.FileSystem | Scope.Scope
