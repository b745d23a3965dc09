/**
 * Subcommands load their implementation when they run, not when `attest` starts: a command file
 * declares the command (name, options, description) with cheap imports only, and its handler is
 *
 *   lazy(() => import("./registrar.run.js"), (m) => m.run)
 *
 * so `attest --version`, `--help` and argument parsing never load the TPM, PKI, HTTP or database
 * code (in the bundle, each `.run` module and what only it uses is a chunk read on demand).
 */
import { Effect } from "effect"

export const lazy =
  <M, A, B, E, R>(load: () => Promise<M>, pick: (m: M) => (args: A) => Effect.Effect<B, E, R>) =>
  (args: A): Effect.Effect<B, E, R> =>
    // a module that cannot be loaded is a broken installation, not an input error
    Effect.flatMap(Effect.promise(load), (m) => pick(m)(args))
