/** Test data from ../shared/vectors (beside the project root, in CI too). */
import { readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

export const vectorsDir = resolve(dirname(fileURLToPath(import.meta.url)), "../../../shared/vectors")

export const vectorPath = (...parts: Array<string>): string => join(vectorsDir, ...parts)
export const readVector = (...parts: Array<string>): Uint8Array => new Uint8Array(readFileSync(vectorPath(...parts)))
export const readVectorText = (...parts: Array<string>): string => readFileSync(vectorPath(...parts), "utf8")
