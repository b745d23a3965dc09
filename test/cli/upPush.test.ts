/**
 * `attest up --agents 1 --push 1` as a child process: a pull agent and a push agent, each
 * registered, enrolled at the one verifier (the push agent as a push agent, with its registered AK
 * and the policies of its machine) and attested; `--tamper 2` makes the push agent's next
 * attestation fail with policy_violation, which the status lines and the verifier's API both show;
 * the verifier never polls the push agent; a restart on the same data resumes the push agent, and
 * `--reset` starts a new one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AttestProcess, startAttest } from "../support/attestProcess.js"
import { portClosed, upAdminGet } from "../support/upAdmin.js"

const PORTS = [
  "--registrar-port", "0", "--registrar-tls-port", "0", "--verifier-port", "0", "--agent-port", "0",
  "--metrics-port", "0", "--verifier-metrics-port", "0", "--dashboard-port", "-1"
]

const adminGet = upAdminGet

const urlOf = (line: string) => /(https:\/\/\S+)/.exec(line)![1]!

describe("attest up --push", () => {
  it.live("attests a pull and a push agent side by side; a tampered push agent fails with policy_violation; restart resumes it; --reset starts fresh", () =>
    Effect.promise(async () => {
      const cwd = mkdtempSync(join(tmpdir(), "attest-up-push-"))
      const runs: Array<AttestProcess> = []
      try {
        const first = startAttest(["up", "--agents", "1", "--push", "1", "--tamper", "2", ...PORTS], { cwd })
        runs.push(first)
        const verifier = urlOf((await first.waitFor(/^verifier   https:\/\/\S+  \(admin API/, 120_000)).text)
        const pushLine = await first.waitFor(/^agent 2  \S+  push agent started/, 120_000)
        const pushId = pushLine.text.split(/\s+/)[2]!
        await first.waitFor(/^ready: 1 of 1 agents enrolled at the verifier and 1 of 1 push agents in/, 240_000)
        expect(first.lines.some((l) => l.text === `agent 2  ${pushId}  push, enrolled at the verifier (runtime policy from its IMA list, reference state from its boot log)`)).toBe(true)
        await first.waitFor(/^all 2 agents attested/, 180_000)
        await first.waitFor(/^agent 1  \S+  Get Quote \(3\), verdict pass, \d+ attestations$/, 60_000)

        // --tamper 2: the push agent's machine runs an unlisted executable; its next attestation fails
        await first.waitFor(new RegExp(`^agent 2  ${pushId}  TAMPERED: its machine ran /usr/local/bin/tampered-2`), 120_000)
        await first.waitFor(new RegExp(`^agent 2  ${pushId}  push, FAIL, verdict fail, \\d+ attestations, last failure policy_violation: ima\\.validation\\.ima-ng\\.not_in_allowlist: File not found in allowlist: /usr/local/bin/tampered-2 `), 120_000)
        const attestations = await adminGet(cwd, verifier, `/v3.0/agents/${pushId}/attestations`)
        const verdicts = (attestations.json.data as Array<any>).filter((a) => a.attributes.stage === "verification_complete").map((a) => `${a.attributes.evaluation} ${a.attributes.failure_reason}`)
        expect(verdicts[0]).toEqual("pass null")
        expect(verdicts).toContain("fail policy_violation")
        const v2 = await adminGet(cwd, verifier, `/v2.6/agents/${pushId}`)
        expect({ status: v2.json.results.attestation_status }).toEqual({ status: "FAIL" })
        // not polled: a polled push agent (no port) would have gone to FAILED (7) after its retries
        expect(v2.json.results.operational_state).not.toEqual(7)
        // one verifier holds both agents, and it never polled the push agent (it has no port to poll)
        const listed = await adminGet(cwd, verifier, "/v2.6/agents/")
        expect(listed.json.results.uuids.flat()).toHaveLength(2)
        expect(listed.json.results.uuids.flat()).toContain(pushId)
        expect(first.lines.filter((l) => l.text.includes(pushId) && /not reachable|quote request failed|Failed \(7\)/.test(l.text)).map((l) => l.text)).toEqual([])

        expect(await first.stop()).not.toBe("timeout")
        expect(first.lines.some((l) => l.text === "attest up: stopped")).toBe(true)
        const pushPort = Number(new URL(verifier).port)
        expect({ port: pushPort, closed: await portClosed(pushPort) }).toEqual({ port: pushPort, closed: true })

        // a restart on the same data: the same push agent, resumed at the verifier (still FAIL:
        // as Keylime, a push agent's failure stands until it is reactivated or enrolled again)
        const second = startAttest(["up", "--agents", "1", "--push", "1", ...PORTS], { cwd })
        runs.push(second)
        expect((await second.waitFor(/^attest up: data directory /, 120_000)).text).toContain("(reused)")
        await second.waitFor(new RegExp(`^agent 2  ${pushId}  push, already at the verifier \\(FAIL\\): resumed$`), 240_000)
        await second.waitFor(/^all 2 agents attested/, 180_000)
        expect(await second.stop()).not.toBe("timeout")

        // --reset: a new push agent (new id), enrolled and attested
        const third = startAttest(["up", "--agents", "1", "--push", "1", "--reset", ...PORTS], { cwd })
        runs.push(third)
        expect((await third.waitFor(/^attest up: data directory /, 120_000)).text).toContain("(reset)")
        const fresh = (await third.waitFor(/^agent 2  \S+  push, enrolled at the verifier/, 240_000)).text.split(/\s+/)[2]!
        expect(fresh).not.toEqual(pushId)
        await third.waitFor(new RegExp(`^agent 2  ${fresh}  push, PASS, verdict pass, \\d+ attestations$`), 180_000)
        expect(await third.stop()).not.toBe("timeout")
      } finally {
        for (const r of runs) if (r.child.exitCode === null) r.child.kill("SIGKILL")
        rmSync(cwd, { recursive: true, force: true })
      }
    }), 900_000)
})
