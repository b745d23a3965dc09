/**
 * The `attest` executable tests spawn: the bundle users run (dist/cli/attest.js), made from the
 * current sources once per run by test/support/globalSetup.ts (scripts/build-if-needed.mjs). A
 * spawn through tsx compiled the sources again in every child (about 6 s on a loaded 2-core
 * machine, against about 1 s for the bundle).
 */
import { join, resolve } from "node:path"

export const root = resolve(__dirname, "../..")
export const ATTEST_BIN = join(root, "dist/cli/attest.js")

/** Node's arguments to run `attest <args>`. */
export const attestArgs = (args: ReadonlyArray<string>): Array<string> => [ATTEST_BIN, ...args]
