/**
 * The IMA engine of a checkout for bench/ima.ts, in the form the verifier runs it: bundled by esbuild
 * (modules scope-hoisted, as in dist/cli/attest.js). Imported module by module through tsx instead,
 * the modules load as CommonJS and every read of an imported binding is a getter call, which costs
 * the engine's loops more than the verifier ever pays (main's +1,000 entries 1.6× slower that way);
 * `--sources` measures that form anyway.
 */
import { build } from "esbuild"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { encodeEvaluationState, initialEvaluationState } from "../src/attestation/evaluate/state.js"
import type { loadRuntimePolicy } from "../src/ima/load.js"
import type { keyringFromPems } from "../src/ima/signatures.js"
import type { verifyIma } from "../src/ima/verify.js"

export interface Engine {
  readonly verifyIma: typeof verifyIma
  readonly loadRuntimePolicy: typeof loadRuntimePolicy
  readonly keyringFromPems: typeof keyringFromPems
  readonly encodeEvaluationState: typeof encodeEvaluationState
  readonly initialEvaluationState: typeof initialEvaluationState
}

const exports = [
  `export { verifyIma } from "./src/ima/verify.ts"`,
  `export { loadRuntimePolicy } from "./src/ima/load.ts"`,
  `export { keyringFromPems } from "./src/ima/signatures.ts"`,
  `export { encodeEvaluationState, initialEvaluationState } from "./src/attestation/evaluate/state.ts"`
].join("\n")

export const sourcesOnly = process.argv.includes("--sources")

/** The engine of the checkout at `dir`: bundled into a temporary file, or its sources with `--sources`. */
export const engineOf = async (dir: string): Promise<Engine> => {
  if (sourcesOnly) {
    return { ...(await import(join(dir, "src/ima/verify.ts"))), ...(await import(join(dir, "src/ima/load.ts"))), ...(await import(join(dir, "src/ima/signatures.ts"))), ...(await import(join(dir, "src/attestation/evaluate/state.ts"))) } as Engine
  }
  const outfile = join(mkdtempSync(join(tmpdir(), "bench-ima-")), "engine.mjs")
  await build({ stdin: { contents: exports, resolveDir: dir, loader: "ts" }, bundle: true, format: "esm", platform: "node", outfile, logLevel: "warning" })
  return (await import(pathToFileURL(outfile).href)) as Engine
}
