/**
 * `attest up`'s live view: every second the verifier's statuses of up's agents (the tenant's bulk
 * list) become the status table, redrawn in place on a terminal, or printed as change lines
 * otherwise. Tampering: `--tamper <n|uuid>` (once that agent has attested) and, on a terminal, a
 * digit key make that simulated machine run an executable its policy does not allow.
 */
import { Clock, Duration, Effect, Queue, Ref, Schedule } from "effect"
import * as crypto from "node:crypto"
import { verifierBulk } from "../../tenant/agentCommands.js"
import type { Connections } from "../../tenant/connect.js"
import type { AnyAgentStatus } from "../../../schemas/Verifier.js"
import { isOperationalState, stateName } from "../../verifier/states.js"
import type { UpAgent } from "./enrol.js"
import { changeLine, redraw, renderTable, type StatusRow } from "./statusTable.js"

export interface WatchOptions {
  /** Agents (number or uuid) to tamper with once they have attested. */
  readonly tamper: ReadonlyArray<string>
  /** When up started (ms), for the "all attested" line. */
  readonly started: number
  /** A person may be watching (pretty logs): a terminal gets the redrawn table and tamper keys. */
  readonly interactive: boolean
  readonly say: (line: string) => Effect.Effect<void>
}

export const TAMPERED_PATH = "/usr/local/bin/tampered"

const rowOf = (a: UpAgent, s: AnyAgentStatus | undefined): StatusRow =>
  s === undefined
    ? { n: a.n, agentId: a.agent.agentId, stateName: "not at the verifier", state: null, attestations: 0, lastSuccess: null, lastFailure: null }
    : {
      n: a.n,
      agentId: a.agent.agentId,
      stateName: isOperationalState(s.operational_state) ? stateName[s.operational_state] : "unknown",
      state: s.operational_state,
      attestations: s.attestation_count,
      lastSuccess: s.last_successful_attestation ?? null,
      lastFailure: s.last_event_id === null || s.last_event_id === ""
        ? null
        : `${s.last_event_id}${"last_event_message" in s && s.last_event_message ? `: ${s.last_event_message}` : ""}`
    }

/** The agent `--tamper` names: its number in the table or its uuid. */
export const findAgent = (agents: ReadonlyArray<UpAgent>, which: string): UpAgent | undefined =>
  agents.find((a) => String(a.n) === which.trim() || a.agent.agentId === which.trim())

export const watchStatus = (c: Connections, agents: ReadonlyArray<UpAgent>, o: WatchOptions) =>
  Effect.gen(function*() {
    const tty = o.interactive && process.stdout.isTTY === true
    for (const t of o.tamper) {
      if (findAgent(agents, t) === undefined) yield* o.say(`--tamper ${t}: no such agent (give its number 1-${agents.length} or its uuid)`)
    }
    const pending = yield* Ref.make(new Set(o.tamper.map((t) => findAgent(agents, t)?.n).filter((n): n is number => n !== undefined)))
    const keys = yield* Queue.unbounded<number>()
    const tampered = new Set<number>()
    const tamper = (a: UpAgent) =>
      Effect.gen(function*() {
        tampered.add(a.n)
        const file = `${TAMPERED_PATH}-${a.n}`
        yield* a.machine.measure(file, crypto.randomBytes(16).toString("hex"))
        yield* o.say(`agent ${a.n}  ${a.agent.agentId}  TAMPERED: its machine ran ${file}, which its runtime policy does not allow`)
      })

    if (tty && process.stdin.isTTY === true) {
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const onKey = (b: Buffer) => {
            const k = b.toString("utf8")
            if (k === "\u0003" || k === "q") process.kill(process.pid, "SIGINT")
            else if (/^[1-9]$/.test(k)) Queue.unsafeOffer(keys, Number(k))
          }
          process.stdin.setRawMode(true)
          process.stdin.on("data", onKey)
          process.stdin.resume()
          return onKey
        }),
        (onKey) =>
          Effect.sync(() => {
            process.stdin.off("data", onKey)
            process.stdin.setRawMode(false)
            process.stdin.pause()
          })
      )
      yield* o.say("keys: 1-9 tamper with that agent's machine, q stops")
    }

    let drawn = 0
    let previous = new Map<number, StatusRow>()
    let allAttested = false
    const refresh = Effect.gen(function*() {
      for (const n of yield* Queue.takeAll(keys)) {
        const a = agents.find((x) => x.n === n)
        if (a !== undefined && !tampered.has(n)) yield* tamper(a)
      }
      const statuses = new Map(yield* verifierBulk(c))
      const rows = agents.map((a) => rowOf(a, statuses.get(a.agent.agentId)))
      for (const r of rows) {
        if (r.attestations > 0 && (yield* Ref.get(pending)).has(r.n)) {
          yield* Ref.update(pending, (s) => new Set([...s].filter((n) => n !== r.n)))
          yield* tamper(agents.find((a) => a.n === r.n)!)
          drawn = 0
        }
      }
      // attested since this start (a restart resumes agents whose counts are from before)
      if (!allAttested && rows.length > 0 && rows.every((r) => r.lastSuccess !== null && r.lastSuccess * 1000 >= o.started - 1000)) {
        allAttested = true
        yield* o.say(`all ${rows.length} agents attested ${((Date.now() - o.started) / 1000).toFixed(1)} s after start`)
        drawn = 0
      }
      const now = (yield* Clock.currentTimeMillis) / 1000
      if (tty) {
        const lines = renderTable(rows, now)
        process.stdout.write(redraw(drawn, lines))
        drawn = lines.length
      } else {
        for (const r of rows) {
          const line = changeLine(previous.get(r.n), r)
          if (line !== null) yield* o.say(line)
        }
      }
      previous = new Map(rows.map((r) => [r.n, r]))
    }).pipe(
      // the verifier not answering for a moment is shown, not fatal
      Effect.catchAll((e) => o.say(`status: ${e.message}`))
    )
    return yield* refresh.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))), Effect.zipRight(Effect.never))
  })
