/**
 * Runs the `attest` executable (the bundle, attestBin.ts) as a child process, asynchronously: a blocking
 * spawnSync starves vitest's worker RPC on a busy machine ("Timeout calling onTaskUpdate").
 */
import { spawn } from "node:child_process"
import { attestArgs, root } from "./attestBin.js"

export interface SpawnResult {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

export const spawnAttest = (...args: Array<string>): Promise<SpawnResult> => spawnAttestWith({}, ...args)

/** The same with `input` written to its standard input (then closed). */
export const spawnAttestWith = (o: { readonly input?: string }, ...args: Array<string>): Promise<SpawnResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, attestArgs(args), { cwd: root })
    child.stdin.end(o.input ?? "")
    let out = ""
    let err = ""
    child.stdout.on("data", (d: Buffer) => (out += d.toString()))
    child.stderr.on("data", (d: Buffer) => (err += d.toString()))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, out, err }))
  })
