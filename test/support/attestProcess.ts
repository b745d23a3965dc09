/**
 * `attest` as a long-running child process (the bundle, attestBin.ts): its output lines as they come, waiting
 * for a line with a generous bound, and stopping it (SIGINT, then SIGKILL if it does not exit).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { attestArgs, root } from "./attestBin.js"

export interface AttestProcess {
  readonly child: ChildProcess
  readonly lines: Array<{ readonly at: number; readonly text: string }>
  readonly exited: Promise<number | null>
  /** Resolves with the first line matching, rejects (with the output so far) after `ms` or at exit. */
  readonly waitFor: (pattern: RegExp, ms: number) => Promise<{ readonly at: number; readonly text: string }>
  readonly output: () => string
  /** SIGINT, SIGKILL after 10 s; resolves with the exit code ("timeout" if it had to be killed). */
  readonly stop: () => Promise<number | null | "timeout">
}

export const startAttest = (
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Readonly<Record<string, string>> } = {}
): AttestProcess => {
  const child = spawn(process.execPath, attestArgs(args), {
    cwd: options.cwd ?? root,
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } })
  })
  const lines: AttestProcess["lines"] = []
  const buffered = { out: "", err: "" }
  const onData = (key: "out" | "err") => (chunk: Buffer) => {
    buffered[key] += chunk.toString("utf8")
    const parts = buffered[key].split("\n")
    buffered[key] = parts.pop() ?? ""
    for (const text of parts) lines.push({ at: performance.now(), text })
  }
  child.stdout!.on("data", onData("out"))
  child.stderr!.on("data", onData("err"))
  const exited = new Promise<number | null>((r) =>
    child.once("exit", (code) => {
      for (const key of ["out", "err"] as const) if (buffered[key] !== "") lines.push({ at: performance.now(), text: buffered[key] })
      r(code)
    })
  )
  const output = () => lines.map((l) => l.text).join("\n")
  const waitFor = async (pattern: RegExp, ms: number) => {
    const until = performance.now() + ms
    while (performance.now() < until) {
      const hit = lines.find((l) => pattern.test(l.text))
      if (hit) return hit
      if (child.exitCode !== null) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const hit = lines.find((l) => pattern.test(l.text))
    if (hit) return hit
    throw new Error(`no line matching ${pattern} within ${ms} ms; output:\n${output()}`)
  }
  const stop = async () => {
    if (child.exitCode === null) child.kill("SIGINT")
    const code = await Promise.race([exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 10_000))])
    if (code === "timeout" && child.exitCode === null) child.kill("SIGKILL")
    return code
  }
  return { child, lines, exited, waitFor, output, stop }
}
