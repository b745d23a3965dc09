/**
 * Suites that need a real external part (swtpm + tpm2-tools, PostgreSQL) call `requireOrSkip`.
 * Outside CI a missing part skips the suite with a loud warning; with ATTEST_TEST_ALL=1 (set by
 * .ci/run) a missing part fails the run, so a skipped suite can never pass for a tested one.
 */
import { execFileSync } from "node:child_process"
import * as net from "node:net"

export const allSuitesRequired = process.env["ATTEST_TEST_ALL"] === "1"

export const requireOrSkip = (what: string, available: boolean, hint: string): boolean => {
  if (available) return true
  if (allSuitesRequired) {
    throw new Error(`${what} is required (ATTEST_TEST_ALL=1) but not available: ${hint}`)
  }
  const line = "*".repeat(78)
  // straight to stderr: the console of a test is shown only when it fails (vitest.config.ts), and a skipped suite must be seen
  process.stderr.write(`\n${line}\n*** SKIPPING suite: ${what} is not available (${hint}).\n*** Set ATTEST_TEST_ALL=1 to make this a failure, as CI does.\n${line}\n`)
  return false
}

const hasCommand = (cmd: string): boolean => {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** swtpm, swtpm_setup, swtpm_ioctl and the tpm2-tools we drive. */
export const swtpmAvailable = (): boolean =>
  ["swtpm", "swtpm_setup", "swtpm_ioctl", "tpm2_startup", "tpm2_quote"].every(hasCommand)

export const needsSwtpm = (): boolean =>
  requireOrSkip("swtpm with tpm2-tools", swtpmAvailable(), "apt-get install -y swtpm swtpm-tools tpm2-tools")

/** The PostgreSQL test server: 127.0.0.1:5432, trust auth, database `test` (override with ATTEST_TEST_PG_URL). */
export const postgresUrl = process.env["ATTEST_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

export const postgresAvailable = (): Promise<boolean> =>
  new Promise((resolve) => {
    const url = new URL(postgresUrl)
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 5432) })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })

export const needsPostgres = async (): Promise<boolean> =>
  requireOrSkip("PostgreSQL", await postgresAvailable(), `nothing answers at ${postgresUrl}`)

/** Debian's chromium, which the dashboard's browser tests drive through playwright-core. */
export const CHROMIUM_PATH = process.env["ATTEST_TEST_CHROMIUM"] ?? "/usr/bin/chromium"

export const chromiumAvailable = (): boolean => {
  try {
    execFileSync(CHROMIUM_PATH, ["--version"], { stdio: "ignore", timeout: 60_000 })
    return true
  } catch {
    return false
  }
}

export const needsChromium = (): boolean =>
  requireOrSkip("chromium", chromiumAvailable(), `no working ${CHROMIUM_PATH}: apt-get install -y chromium`)

/** Whether this process may mount a small tmpfs (root with CAP_SYS_ADMIN): a real full disk for SQLite. */
export const tmpfsMountable = (): boolean => {
  if (process.getuid?.() !== 0 || !hasCommand("mount")) return false
  const dir = execFileSync("mktemp", ["-d"]).toString().trim()
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir], { stdio: "ignore" })
    execFileSync("umount", [dir], { stdio: "ignore" })
    return true
  } catch {
    return false
  } finally {
    execFileSync("rmdir", [dir], { stdio: "ignore" })
  }
}

export const needsTmpfs = (): boolean =>
  requireOrSkip("mounting a tmpfs (a real full disk)", tmpfsMountable(), "run as root with CAP_SYS_ADMIN")
