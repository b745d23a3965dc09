// Adds package-lock entries for platform-specific optional dependencies that the registry
// mirror here does not serve (it answers 404 for other platforms' binaries), so `npm ci`
// sees a lock in sync with package.json. Each entry is marked optional with the os/cpu its
// name states, so npm skips it on other platforms instead of fetching it.
import { readFileSync, writeFileSync } from "node:fs"

const file = process.argv[2] ?? "package-lock.json"
const lock = JSON.parse(readFileSync(file, "utf8"))
const pkgs = lock.packages
const platformOf = (name) => {
  const n = name.split("/").pop()
  const os = ["android", "darwin", "freebsd", "linux", "openbsd", "win32", "openharmony", "sunos", "aix", "netbsd", "cygwin"].find((o) => n.includes(o))
  const cpu = ["arm64", "x64", "ia32", "arm", "loong64", "ppc64", "riscv64", "s390x", "mips64el"].find((c) => new RegExp(`(^|-)${c}(-|$)`).test(n.replace(/-(gnu|musl|msvc|gnueabihf|musleabihf|eabi)$/, "")))
  return { os, cpu }
}
let added = 0
for (const [path, meta] of Object.entries(pkgs)) {
  for (const [dep, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const at = path === "" ? `node_modules/${dep}` : `${path}/node_modules/${dep}`
    const hoisted = `node_modules/${dep}`
    if (pkgs[at] || pkgs[hoisted]) continue
    const { os, cpu } = platformOf(dep)
    if (!os) continue // not a platform binary (e.g. fsevents handled by npm itself)
    const version = String(range).replace(/^[~^=]/, "")
    pkgs[hoisted] = { version, ...(meta.dev ? { dev: true } : {}), optional: true, ...(os ? { os: [os] } : {}), ...(cpu ? { cpu: [cpu] } : {}) }
    added++
  }
}
const sorted = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))))
lock.packages = sorted
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n")
console.log(`added ${added} platform entries`)
