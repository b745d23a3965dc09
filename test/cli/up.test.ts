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
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { simulatorManufacturerCa } from "../../src/tpm/simulator/TpmSimulator.js"
import { attestArgs } from "../support/attestBin.js"
import { freePort } from "../support/swtpm.js"
import { portClosed, upAdminGet } from "../support/upAdmin.js"


interface Run {
  readonly child: ChildProcess
  readonly lines: Array<{ readonly at: number; readonly text: string }>
  readonly exited: Promise<number | null>
}

const start = (cwd: string, ports: ReadonlyArray<number>, extra: ReadonlyArray<string> = []): Run => {
  const child = spawn(process.execPath, [
    ...attestArgs(["up"]),
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

const stop = async (run: Run) => {
  if (run.child.exitCode === null) run.child.kill("SIGINT")
  const code = await Promise.race([run.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 10_000))])
  if (code === "timeout" && run.child.exitCode === null) run.child.kill("SIGKILL")
  return code
}

/** The `results` of an admin GET (the envelope's payload). */
const adminGet = async (cwd: string, url: string, path: string) =>
  (await upAdminGet(cwd, url, path)).json.results as { operational_state: number; last_successful_attestation: number | null }
const adminList = async (cwd: string, url: string) => (await upAdminGet(cwd, url, "/v2.5/agents/")).json.results as { uuids: Array<unknown> }

describe("attest up", () => {
  it.live("starts a registrar, a verifier and three attested agents in an empty directory, shows a tampered one fail, stops on SIGINT and resumes on the same data", () =>
    Effect.promise(async () => {
      const cwd = mkdtempSync(join(tmpdir(), "attest-up-"))
      const ports = [await freePort(), await freePort(), await freePort()]
      const runs: Array<Run> = []
      try {
        // ports are picked free before the start; another process on a busy machine may take one
        // first: then up says EADDRINUSE and exits, and it is started again on other ports
        let first = start(cwd, ports, ["--tamper", "2"])
        runs.push(first)
        for (let attempt = 1; attempt < 4 && (await waitFor(first, /^registrar  http:\/\/|EADDRINUSE/, 60_000)).text.includes("EADDRINUSE"); attempt++) {
          await first.exited
          for (const i of [0, 1, 2]) ports[i] = await freePort()
          first = start(cwd, ports, ["--tamper", "2"])
          runs.push(first)
        }
        const listening = await waitFor(first, /^registrar  http:\/\//, 60_000)
        // (a start refused for a taken port has made the CA already)
        expect((await waitFor(first, /^attest up: data directory /, 1000)).text).toContain(runs.length === 1 ? "(new)" : "(reused)")
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
        const failed = await waitFor(first, /^agent 2  \S+  Invalid Quote \(9\), .*last failure ima\.validation\.ima-ng\.not_in_allowlist: File not found in allowlist: \/usr\/local\/bin\/tampered-2 /, 120_000)
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
        // each agent is back at the verifier: resumed, or enrolled again where it listens on a new port (--agent-port 0)
        const back = second.lines.filter((l) => /^agent \d  .* (already at the verifier .*: resumed|listens on a new port .*: enrolled again)$/.test(l.text))
        expect(back.map((l) => l.text.split(/\s+/)[2]!).sort()).toEqual([...ids].sort())
        // agent 1 was never tampered: the restarted verifier attests it again
        const agent1 = ids[agentLines.findIndex((l) => l.text.startsWith("agent 1 "))]!
        const secondStart = Math.floor(Date.now() / 1000) - 60
        const deadline = Date.now() + 120_000
        let status = await adminGet(cwd, `https://127.0.0.1:${ports[2]}`, `/v2.6/agents/${agent1}`)
        while (!(status.operational_state === 3 && (status.last_successful_attestation ?? 0) >= secondStart) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 500))
          status = await adminGet(cwd, `https://127.0.0.1:${ports[2]}`, `/v2.6/agents/${agent1}`)
        }
        expect({ state: status.operational_state, attestedAgain: (status.last_successful_attestation ?? 0) >= secondStart }).toEqual({ state: 3, attestedAgain: true })
        expect(await stop(second)).not.toBe("timeout")
      } finally {
        for (const r of runs) if (r.child.exitCode === null) r.child.kill("SIGKILL")
        rmSync(cwd, { recursive: true, force: true })
      }
    }), 600_000)
})
