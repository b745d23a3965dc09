/**
 * Subcommands load their implementation when they run, not when `attest` starts: a command file
 * declares the command (name, options, description) with cheap imports only, and its handler is
 *
 *   lazy(() => import("./registrar.run.js"), (m) => m.run)
 *
 * so `attest --version`, `--help` and argument parsing never load the TPM, PKI, HTTP or database
 * code (in the bundle, each `.run` module and what only it uses is a chunk read on demand).
 */
import { Effect, FiberRef } from "effect"

/** True once a command's handler runs (its command line was parsed): Root.ts names parse errors until then. */
export const handlerRunning: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

export const lazy =
  <M, A, B, E, R>(load: () => Promise<M>, pick: (m: M) => (args: A) => Effect.Effect<B, E, R>) =>
  (args: A): Effect.Effect<B, E, R> =>
    // a module that cannot be loaded is a broken installation, not an input error
    Effect.flatMap(Effect.promise(load), (m) => pick(m)(args)).pipe(Effect.locally(handlerRunning, true))
