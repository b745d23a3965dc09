import { createRequire } from "node:module"

// package.json sits two levels above src/cli (tsx) and dist/cli (the bundle), three above dist/src/cli (tsc).
const require = createRequire(import.meta.url)
const findVersion = (): string => {
  for (const p of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = require(p) as { name?: string; version?: string }
      if (pkg.name === "attest" && typeof pkg.version === "string") return pkg.version
    } catch {
      // not at this depth; try the next
    }
  }
  return "0.0.0"
}
export const version = findVersion()
