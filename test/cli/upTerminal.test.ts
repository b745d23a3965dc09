/**
 * `attest up` as a person sees it in a real terminal: tmux (a private server) runs it at 80
 * columns, two pull agents and one push agent, agent 2 and the push agent tampered, so a WARN log
 * line and a failure message wider than the screen appear while the table refreshes every second.
 * What the terminal shows (capture-pane, the whole scrollback) has the table's header once, below
 * every log line, its rows within the width (a cut row ends in an ellipsis); after a resize to 200
 * columns it is drawn again once, with full ids and the failure text. Log lines carry no fiber
 * number or span timer.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Effect } from "effect"
import { attestArgs, root } from "../support/attestBin.js"
import { requireOrSkip } from "../support/requirements.js"

const run = promisify(execFile)

const hasTmux = async () => {
  try {
    await run("tmux", ["-V"])
    return true
  } catch {
    return false
  }
}

const HEADER = /^#  model  agent /

describe("attest up in a terminal", async () => {
  const available = requireOrSkip("tmux", await hasTmux(), "apt-get install -y tmux")
  it.live.skipIf(!available)("keeps one table below the log lines at 80 columns, and redraws it once at 200 after a resize", () =>
    Effect.promise(async () => {
      const dir = mkdtempSync(join(tmpdir(), "attest-up-tty-"))
      const socket = `attest-test-${process.pid}`
      const tmux = (...args: Array<string>) => run("tmux", ["-L", socket, "-f", "/dev/null", ...args])
      const screen = async () => (await tmux("capture-pane", "-p", "-t", "up", "-S", "-")).stdout.split("\n")
      const waitForScreen = async (what: string, ok: (lines: ReadonlyArray<string>) => boolean, ms: number) => {
        const until = Date.now() + ms
        let lines: ReadonlyArray<string> = []
        while (Date.now() < until) {
          lines = await screen()
          if (ok(lines)) return lines
          await new Promise((r) => setTimeout(r, 500))
        }
        throw new Error(`the terminal never showed ${what} within ${ms} ms; it shows:\n${lines.join("\n")}`)
      }
      const command = [
        process.execPath, ...attestArgs(["up"]), "--data-dir", join(dir, "data"), "--agents", "2", "--push", "1", "--tamper", "2", "--tamper", "3",
        "--registrar-port", "0", "--registrar-tls-port", "0", "--verifier-port", "0", "--agent-port", "0",
        "--metrics-port", "0", "--verifier-metrics-port", "0", "--dashboard-port", "-1"
      ].map((a) => `'${a}'`).join(" ")
      try {
        await tmux("new-session", "-d", "-s", "up", "-x", "80", "-y", "30", "-c", root, `${command}; sleep 600`)
        const failed = (lines: ReadonlyArray<string>) =>
          lines.some((l) => /^2  pull .*Invalid Quote \(9\)/.test(l)) && lines.some((l) => /^3  push .*FAIL/.test(l)) &&
          lines.some((l) => l.includes("WARN"))
        const narrow = await waitForScreen("agent 2 Invalid Quote, the push agent FAIL and a WARN line", failed, 240_000)
        // two more refreshes, each of which used to leave a table behind
        await new Promise((r) => setTimeout(r, 2500))
        const after = await screen()
        const headers = after.filter((l) => HEADER.test(l))
        const warns = after.map((l, i) => [l, i] as const).filter(([l]) => l.includes("WARN agent "))
        const header = after.findIndex((l) => HEADER.test(l))
        const rows = after.slice(header, header + 4)
        expect({
          headers: headers.length,
          warnsAboveTable: warns.every(([, i]) => i < header),
          rowsWithinWidth: rows.every((l) => l.length < 80),
          agent2: /^2  pull   \w{8}  Invalid Quote \(9\)  fail .*ima\.validation.*…$/.test(rows[2] ?? ""),
          push: /^3  push   \w{8}  FAIL .* fail .*policy_violat/.test(rows[3] ?? ""),
          internals: after.filter((l) => /WARN \(#\d+\)|=\d+ms:/.test(l))
        }).toEqual({ headers: 1, warnsAboveTable: true, rowsWithinWidth: true, agent2: true, push: true, internals: [] })
        expect(narrow.some((l) => /\d{6,}h ago/.test(l))).toBe(false)

        await tmux("resize-window", "-t", "up", "-x", "200", "-y", "30")
        const wide = await waitForScreen("the table with full ids", (lines) => lines.some((l) => /^#  model  agent {33}state/.test(l)), 30_000)
        await new Promise((r) => setTimeout(r, 2500))
        const later = await screen()
        const row2 = later.find((l) => /^2  pull   [0-9a-f-]{36}  Invalid Quote \(9\)/.test(l)) ?? ""
        expect({
          headers: later.filter((l) => HEADER.test(l)).length,
          failureText: row2.includes("ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/local/bin/tampered-2"),
          withinWidth: later.every((l) => l.length <= 200)
        }).toEqual({ headers: 1, failureText: true, withinWidth: true })
        expect(wide.length).toBeGreaterThan(0)
      } finally {
        await tmux("send-keys", "-t", "up", "q").catch(() => undefined)
        await new Promise((r) => setTimeout(r, 1500))
        await tmux("kill-server").catch(() => undefined)
        rmSync(dir, { recursive: true, force: true })
      }
    }), 400_000)
})
