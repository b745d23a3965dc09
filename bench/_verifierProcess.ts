/**
 * `attest verifier` as its own process for a benchmark: started with a config file (the bundle, see
 * _verifierCommand.ts), its API URL read from its start line, the generated admin client's TLS
 * files; stopped with SIGINT and awaited when the scope closes (a CPU profile is written as it exits).
 * Given `attest` (another build's attest.js), that build runs instead: a baseline in the same run.
 */
import { spawn } from "node:child_process"
import { appendFileSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { CA_FILES } from "../src/pki/layout.js"
import { attestCommand } from "./_verifierCommand.js"

/** BENCH_VERIFIER_NODE_ARGS="<flags>": node flags for the verifier (e.g. a V8 heap setting), space-separated. */
export const verifierNodeArgs = (): Array<string> => (process.env["BENCH_VERIFIER_NODE_ARGS"] ?? "").split(" ").filter((a) => a !== "")

export const spawnVerifier = (config: string, caDir: string, nodeArgs: ReadonlyArray<string> = [], attest?: string) =>
  Effect.gen(function*() {
    // `attest`: another build's attest.js (a same-run baseline), else the build _verifierCommand.ts picks
    const command = attest === undefined ? attestCommand(["verifier", "--config", config]) : [attest, "verifier", "--config", config]
    const child = spawn(process.execPath, [...verifierNodeArgs(), ...nodeArgs, ...command], { stdio: ["ignore", "pipe", "inherit"] })
    const exited = new Promise((r) => child.once("exit", r))
    // BENCH_VERIFIER_LOG=<file>: the verifier's output kept (its warnings say which agent and why)
    const log = process.env["BENCH_VERIFIER_LOG"]
    if (log !== undefined) child.stdout.on("data", (d: Buffer) => appendFileSync(log, d))
    yield* Effect.addFinalizer(() => Effect.promise(() => (child.kill("SIGINT"), exited)))
    const url = yield* Effect.async<string>((resume) => {
      let out = ""
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString()
        const m = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/.exec(out)
        if (m) resume(Effect.succeed(m[1]!))
      })
      child.once("exit", (code) => resume(Effect.dieMessage(`attest verifier exited (${code}): ${out}`)))
    })
    const tls = {
      ca: readFileSync(join(caDir, CA_FILES.caCert), "utf8"),
      cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"),
      key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8")
    }
    return { url, pid: child.pid!, tls }
  })
