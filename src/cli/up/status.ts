/**
 * `attest up`'s live view: every second the verifier's statuses of up's agents (its bulk list, as
 * the tenant reads it; a push agent's carries its acceptance, latest verdict and last failure)
 * become the status table, drawn in the live region on a terminal, or printed as change lines
 * otherwise. Tampering: `--tamper <n|uuid>` (once that agent has attested) and,
 * on a terminal, a digit key make that simulated machine run an executable its policy does not allow.
 */
import { Clock, Duration, Effect, Queue, Ref, Schedule } from "effect"
import * as crypto from "node:crypto"
import type { SimulatedMachineShape } from "../../agent/measurements/SimulatedMachine.js"
import { verifierBulk } from "../../tenant/agentCommands.js"
import { acceptanceOf, failureText, verdictOf } from "../../tenant/agentStatus.js"
import type { Connections } from "../../tenant/connect.js"
import type { AnyAgentStatus } from "../../../schemas/Verifier.js"
import { isOperationalState, stateName } from "../../attestation/states.js"
import type { UpAgent } from "./enrol.js"
import type { UpPushAgent } from "./pushAgents.js"
import { UsageError } from "../../config/usageError.js"
import type { LiveRegion } from "./liveRegion.js"
import { changeLine, renderTable, type StatusRow } from "./statusTable.js"

export interface WatchOptions {
  /** Agents (number or uuid) to tamper with once they have attested. */
  readonly tamper: ReadonlyArray<string>
  /** When up started (ms), for the "all attested" line. */
  readonly started: number
  /** A person may be watching (pretty logs): a terminal gets the redrawn table and tamper keys. */
  readonly interactive: boolean
  /** The terminal region the table is drawn in (a terminal and pretty logs); without it, change lines. */
  readonly region?: LiveRegion | undefined
  readonly say: (line: string) => Effect.Effect<void>
}

export const TAMPERED_PATH = "/usr/local/bin/tampered"

/** What the table and `--tamper` know of any agent of up. */
export interface Watched {
  readonly n: number
  readonly model: "pull" | "push"
  readonly agentId: string
  readonly machine: SimulatedMachineShape
}

export const watchedPull = (a: UpAgent): Watched => ({ n: a.n, model: "pull", agentId: a.agent.agentId, machine: a.machine })
export const watchedPush = (a: UpPushAgent): Watched => ({ n: a.n, model: "push", agentId: a.agentId, machine: a.machine })

const base = (a: Watched) => ({ n: a.n, model: a.model, agentId: a.agentId })

const notThere = (a: Watched): StatusRow => ({ ...base(a), stateName: "not at the verifier", state: null, evaluation: null, attestations: 0, lastSuccess: null, lastFailure: null })

/** A pull agent's row: its operational state, the verdict of its latest quote, its last failure. */
export const pullRow = (a: Watched, s: AnyAgentStatus | undefined): StatusRow =>
  s === undefined ? notThere(a) : {
    ...base(a),
    stateName: isOperationalState(s.operational_state) ? stateName[s.operational_state] : "unknown",
    state: s.operational_state,
    evaluation: verdictOf(s),
    attestations: s.attestation_count,
    lastSuccess: s.last_successful_attestation ? s.last_successful_attestation : null,
    lastFailure: failureText(s),
    owner: s.owner_runner ?? null
  }

/**
 * A push agent's row, from its v2 status as the bulk list gives it: its acceptance as its state,
 * the verdict of its latest completed attestation (one in progress does not change it, so the row
 * does not flicker each cycle), its last failure with its reason.
 */
export const pushRow = (a: Watched, s: AnyAgentStatus | undefined): StatusRow =>
  s === undefined ? notThere(a) : {
    ...base(a),
    stateName: acceptanceOf(s),
    state: null,
    evaluation: verdictOf(s),
    attestations: s.attestation_count,
    lastSuccess: s.last_successful_attestation ? s.last_successful_attestation : null,
    lastFailure: failureText(s)
  }

/** The agent `--tamper` names: its number in the table or its uuid. */
export const findAgent = (agents: ReadonlyArray<Watched>, which: string): Watched | undefined =>
  agents.find((a) => String(a.n) === which.trim() || a.agentId === which.trim())

/** Up's agents and the tenant connections that read their verifiers. */
export interface Fleet {
  /** The tenant's connections: every agent's status is in the verifier's bulk list. */
  readonly connections: Connections
  readonly pull: ReadonlyArray<UpAgent>
  readonly push: ReadonlyArray<UpPushAgent>
}

export const watchStatus = (fleet: Fleet, o: WatchOptions) =>
  Effect.gen(function*() {
    const pullAgents = fleet.pull.map(watchedPull)
    const pushAgents = fleet.push.map(watchedPush)
    const agents = [...pullAgents, ...pushAgents]
    const region = o.interactive ? o.region : undefined
    for (const t of o.tamper) {
      if (findAgent(agents, t) === undefined) {
        return yield* new UsageError({ message: `--tamper ${t}: no such agent; give its number 1-${agents.length} or its uuid` })
      }
    }
    const pending = yield* Ref.make(new Set(o.tamper.map((t) => findAgent(agents, t)?.n).filter((n): n is number => n !== undefined)))
    const keys = yield* Queue.unbounded<number>()
    const tampered = new Set<number>()
    const tamper = (a: Watched) =>
      Effect.gen(function*() {
        tampered.add(a.n)
        const file = `${TAMPERED_PATH}-${a.n}`
        yield* a.machine.measure(file, crypto.randomBytes(16).toString("hex"))
        yield* o.say(`agent ${a.n}  ${a.agentId}  TAMPERED: its machine ran ${file}, which its runtime policy does not allow`)
      })

    if (region !== undefined && process.stdin.isTTY === true) {
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

    let previous = new Map<number, StatusRow>()
    let allAttested = false
    const refresh = Effect.gen(function*() {
      for (const n of yield* Queue.takeAll(keys)) {
        const a = agents.find((x) => x.n === n)
        if (a !== undefined && !tampered.has(n)) yield* tamper(a)
      }
      const statuses = new Map(yield* verifierBulk(fleet.connections))
      const rows = [
        ...pullAgents.map((a) => pullRow(a, statuses.get(a.agentId))),
        ...pushAgents.map((a) => pushRow(a, statuses.get(a.agentId)))
      ]
      for (const r of rows) {
        if (r.attestations > 0 && (yield* Ref.get(pending)).has(r.n)) {
          yield* Ref.update(pending, (s) => new Set([...s].filter((n) => n !== r.n)))
          yield* tamper(agents.find((a) => a.n === r.n)!)
        }
      }
      // attested since this start (a restart resumes agents whose counts are from before)
      if (!allAttested && rows.length > 0 && rows.every((r) => r.lastSuccess !== null && r.lastSuccess * 1000 >= o.started - 1000)) {
        allAttested = true
        yield* o.say(`all ${rows.length} agents attested ${((Date.now() - o.started) / 1000).toFixed(1)} s after start`)
      }
      const now = (yield* Clock.currentTimeMillis) / 1000
      if (region !== undefined) {
        region.draw((columns) => renderTable(rows, now, columns))
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
