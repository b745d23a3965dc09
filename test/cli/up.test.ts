/**
 * `attest up` as a new user runs it: a child process in an empty directory (default ./.attest),
 * every agent registered, enrolled through the tenant's add and attested (how long it took is
 * printed; the time target is bench/up.ts's business, not a test's: CI machines are busy),
 * `--tamper 2` turning agent 2 to Invalid Quote with the IMA failure type, the registrar's and the
 * verifier's admin APIs listing the agents with the printed admin certificate, the simulated TPMs'
 * manufacturer CA written where it says, SIGINT closing every port, and a second start reusing the
 * data directory (same agent ids, resumed at the verifier, attested again).
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as https from "node:https"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import { simulatorManufacturerCa } from "../../layers/TpmSimulator.js"
import { freePort } from "../support/swtpm.js"

const root = resolve(__dirname, "../..")
const tsx = join(root, "node_modules/tsx/dist/loader.mjs")
const bin = join(root, "src/cli/bin.ts")

interface Run {
  readonly child: ChildProcess
  readonly lines: Array<{ readonly at: number; readonly text: string }>
  readonly exited: Promise<number | null>
}

const start = (cwd: string, ports: ReadonlyArray<number>, extra: ReadonlyArray<string> = []): Run => {
  const child = spawn(process.execPath, [
    "--import", tsx, bin, "up",
    "--registrar-port", String(ports[0]), "--registrar-tls-port", String(ports[1]), "--verifier-port", String(ports[2]),
    "--agent-port", "0", "--metrics-port", "0", "--verifier-metrics-port", "0", ...extra
  ], { cwd, stdio: ["ignore", "pipe", "pipe"] })
  const lines: Run["lines"] = []
  let buffered = ""
  const onData = (chunk: Buffer) => {
    buffered += chunk.toString("utf8")
    const parts = buffered.split("\n")
    buffered = parts.pop() ?? ""
    for (const text of parts) lines.push({ at: performance.now(), text })
  }
  child.stdout!.on("data", onData)
  child.stderr!.on("data", onData)
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
  return { child, lines, exited }
}

const waitFor = async (run: Run, pattern: RegExp, ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) {
    const hit = run.lines.find((l) => pattern.test(l.text))
    if (hit) return hit
    if (run.child.exitCode !== null) break
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`no line matching ${pattern} within ${ms} ms; output:\n${run.lines.map((l) => l.text).join("\n")}`)
}

const portClosed = (port: number) =>
  new Promise<boolean>((r) => {
    const s = net.connect({ host: "127.0.0.1", port })
    s.once("connect", () => (s.destroy(), r(false)))
    s.once("error", () => r(true))
  })

const stop = async (run: Run) => {
  if (run.child.exitCode === null) run.child.kill("SIGINT")
  const code = await Promise.race([run.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 10_000))])
  if (code === "timeout" && run.child.exitCode === null) run.child.kill("SIGKILL")
  return code
}

const adminList = (cwd: string, url: string) =>
  new Promise<{ uuids: Array<unknown> }>((resolve, reject) => {
    const ca = join(cwd, ".attest/cv_ca")
    https.get(`${url}/v2.5/agents/`, {
      ca: readFileSync(join(ca, "cacert.crt")),
      cert: readFileSync(join(ca, "client-cert.crt")),
      key: readFileSync(join(ca, "client-private.pem"))
    }, (res) => {
      let body = ""
      res.on("data", (c) => (body += c))
      res.on("end", () => resolve(JSON.parse(body).results))
    }).on("error", reject)
  })

describe("attest up", () => {
  it.live("starts a registrar, a verifier and three attested agents in an empty directory, shows a tampered one fail, stops on SIGINT and resumes on the same data", () =>
    Effect.promise(async () => {
      const cwd = mkdtempSync(join(tmpdir(), "attest-up-"))
      const ports = [await freePort(), await freePort(), await freePort()]
      const runs: Array<Run> = []
      try {
        const first = start(cwd, ports, ["--tamper", "2"])
        runs.push(first)
        const listening = await waitFor(first, /^registrar  http:\/\//, 60_000)
        expect((await waitFor(first, /^attest up: data directory /, 1000)).text).toContain("(new)")
        const ready = await waitFor(first, /^ready: 3 of 3 agents enrolled at the verifier/, 180_000)
        const agentLines = first.lines.filter((l) => /^agent \d  .* registered and activated/.test(l.text))
        expect(agentLines).toHaveLength(3)
        const attested = await waitFor(first, /^all 3 agents attested/, 120_000)
        console.log(`attest up: agents registered ${agentLines.map((l) => Math.round(l.at - listening.at)).join(", ")} ms, enrolled ${Math.round(ready.at - listening.at)} ms, all attested ${Math.round(attested.at - listening.at)} ms after the registrar listened`)
        expect(first.lines.some((l) => l.text.startsWith("admin certificate ") && l.text.includes("client-cert.crt"))).toBe(true)
        // the simulated TPMs' manufacturer CA, for a tenant's EK trust store
        const ekCa = join(cwd, ".attest", "tpm_cert_store", "simulator-ca.pem")
        expect(first.lines.some((l) => l.text.startsWith(`simulated TPM manufacturer CA ${ekCa}`))).toBe(true)
        expect(readFileSync(ekCa, "utf8")).toBe(simulatorManufacturerCa().pem)

        const ids = agentLines.map((l) => l.text.split(/\s+/)[2]!)
        const agentPorts = agentLines.map((l) => Number(/:(\d+)$/.exec(l.text)![1]))
        // --tamper 2: its machine runs an unlisted executable; the status lines show the failure type
        await waitFor(first, /^agent 2  .*TAMPERED: its machine ran \/usr\/local\/bin\/tampered-2/, 120_000)
        const failed = await waitFor(first, /^agent 2  \S+  Invalid Quote \(9\), .*last failure ima\.validation\.ima-ng\.not_in_allowlist/, 120_000)
        expect(failed.text).toContain(ids[agentLines.findIndex((l) => l.text.startsWith("agent 2 "))]!)
        const registrarList = await adminList(cwd, `https://127.0.0.1:${ports[1]}`)
        expect(registrarList.uuids.flat().sort()).toEqual([...ids].sort())
        const verifierList = await adminList(cwd, `https://127.0.0.1:${ports[2]}`)
        expect(verifierList.uuids.flat().sort()).toEqual([...ids].sort())

        const code = await stop(first)
        expect(code).not.toBe("timeout")
        expect(first.lines.some((l) => l.text === "attest up: stopped")).toBe(true)
        for (const p of [...ports, ...agentPorts]) expect({ port: p, closed: await portClosed(p) }).toEqual({ port: p, closed: true })

        const second = start(cwd, ports)
        runs.push(second)
        expect((await waitFor(second, /^attest up: data directory /, 60_000)).text).toContain("(reused)")
        await waitFor(second, /^ready: 3 of 3 agents enrolled at the verifier/, 180_000)
        const resumed = second.lines.filter((l) => /^agent \d  .* already at the verifier .*: resumed/.test(l.text)).map((l) => l.text.split(/\s+/)[2]!)
        expect(resumed.sort()).toEqual([...ids].sort())
        // agent 1 was never tampered: the restarted verifier attests it again
        await waitFor(second, /^agent 1  \S+  Get Quote \(3\), [1-9]\d* attestations$/, 120_000)
        expect(await stop(second)).not.toBe("timeout")
      } finally {
        for (const r of runs) if (r.child.exitCode === null) r.child.kill("SIGKILL")
        rmSync(cwd, { recursive: true, force: true })
      }
    }), 600_000)
})
