/**
 * `attest up`'s live view: every second the verifier's statuses of up's agents become the status
 * table, redrawn in place on a terminal, or printed as change lines otherwise. Pull agents: the
 * verifier's bulk list (the tenant's). Push agents: the verifier's v2 status of each
 * (acceptance, count, last success) and its latest attestation (`GET /v3.0/agents/<id>/attestations/latest`:
 * verdict and failure reason). Tampering: `--tamper <n|uuid>` (once that agent has attested) and,
 * on a terminal, a digit key make that simulated machine run an executable its policy does not allow.
 */
import { Clock, Duration, Effect, Option, Queue, Ref, Schedule } from "effect"
import * as crypto from "node:crypto"
import type { SimulatedMachineShape } from "../../agent/measurements/SimulatedMachine.js"
import { rawRequest } from "../../http/client.js"
import { JSON_API_MEDIA_TYPE } from "../../http/jsonapi.js"
import { verifierBulk, verifierStatus } from "../../tenant/agentCommands.js"
import type { Connections } from "../../tenant/connect.js"
import type { AnyAgentStatus } from "../../../schemas/Verifier.js"
import { isOperationalState, OperationalState, stateName } from "../../verifier/states.js"
import type { UpAgent } from "./enrol.js"
import type { UpPushAgent } from "./pushAgents.js"
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

/**
 * A pull agent's verdict from its status: pending before its first quote, fail when its latest
 * quote is newer than its last success (or the verifier judged it invalid), pass otherwise.
 */
export const pullVerdict = (s: AnyAgentStatus): "pass" | "fail" | "pending" => {
  const received = s.last_received_quote ?? 0
  const success = s.last_successful_attestation ?? 0
  if (s.operational_state === OperationalState.INVALID_QUOTE) return "fail"
  if (received <= 0) return "pending"
  return received > success ? "fail" : "pass"
}

export const pullRow = (a: Watched, s: AnyAgentStatus | undefined): StatusRow =>
  s === undefined
    ? { n: a.n, model: "pull", agentId: a.agentId, stateName: "not at the verifier", state: null, evaluation: null, attestations: 0, lastSuccess: null, lastFailure: null }
    : {
      n: a.n,
      model: "pull",
      agentId: a.agentId,
      stateName: isOperationalState(s.operational_state) ? stateName[s.operational_state] : "unknown",
      state: s.operational_state,
      evaluation: pullVerdict(s),
      attestations: s.attestation_count,
      lastSuccess: s.last_successful_attestation ? s.last_successful_attestation : null,
      lastFailure: s.last_event_id === null || s.last_event_id === ""
        ? null
        : `${s.last_event_id}${"last_event_message" in s && s.last_event_message ? `: ${s.last_event_message}` : ""}`
    }

/** A push agent's latest attestation as its table row needs it. */
export interface LatestAttestation {
  readonly evaluation: "pass" | "fail" | "pending"
  readonly failureReason: string | null
}

/** What the table remembers of a push agent between refreshes: its last completed verdict and failure. */
export interface PushMemory {
  readonly evaluation: "pass" | "fail" | null
  readonly failure: string | null
}

/**
 * A push agent's row: acceptance from its v2 status, the verdict of its last completed attestation
 * (an attestation still awaiting or evaluating evidence keeps the previous verdict, so the row does
 * not flicker each cycle) and the reason of its last failure.
 */
export const pushRow = (a: Watched, s: AnyAgentStatus | undefined, latest: LatestAttestation | undefined, memory: PushMemory): { row: StatusRow; memory: PushMemory } => {
  const done = latest !== undefined && latest.evaluation !== "pending" ? { evaluation: latest.evaluation, failureReason: latest.failureReason } : undefined
  const next: PushMemory = {
    evaluation: done?.evaluation ?? memory.evaluation,
    failure: done?.evaluation === "fail" ? (done.failureReason ?? "fail") : memory.failure
  }
  const status = s === undefined ? undefined : "attestation_status" in s ? s.attestation_status : undefined
  const row: StatusRow = {
    n: a.n,
    model: "push",
    agentId: a.agentId,
    stateName: s === undefined ? "not at the verifier" : status ?? "unknown",
    state: null,
    evaluation: s === undefined ? null : next.evaluation ?? "pending",
    attestations: s?.attestation_count ?? 0,
    lastSuccess: s === undefined || !s.last_successful_attestation ? null : s.last_successful_attestation,
    lastFailure: next.failure
  }
  return { row, memory: next }
}

/** The agent `--tamper` names: its number in the table or its uuid. */
export const findAgent = (agents: ReadonlyArray<Watched>, which: string): Watched | undefined =>
  agents.find((a) => String(a.n) === which.trim() || a.agentId === which.trim())

/** The verifier's latest push attestation of an agent; undefined before the first (404) or when unreadable. */
const latestAttestation = (c: Connections, agentId: string) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    const r = yield* rawRequest({
      method: "GET",
      baseUrl: v.url,
      path: `/v3.0/agents/${agentId}/attestations/latest`,
      tls: c.settings.tls,
      headers: { accept: JSON_API_MEDIA_TYPE }
    }).pipe(Effect.timeout(c.timeout))
    if (r.status !== 200) return undefined
    const attributes = (JSON.parse(r.body) as { data?: { attributes?: { evaluation?: unknown; failure_reason?: unknown } } }).data?.attributes
    const evaluation = attributes?.evaluation
    if (evaluation !== "pass" && evaluation !== "fail" && evaluation !== "pending") return undefined
    const latest: LatestAttestation = { evaluation, failureReason: typeof attributes?.failure_reason === "string" ? attributes.failure_reason : null }
    return latest
  }).pipe(Effect.orElseSucceed(() => undefined))

/** Each push agent's v2 status (undefined when the verifier does not hold it) and latest attestation. */
const pushStatuses = (c: Connections, agents: ReadonlyArray<Watched>) =>
  Effect.forEach(
    agents,
    (a) =>
      Effect.all([
        verifierStatus(c, a.agentId).pipe(Effect.map(Option.some), Effect.catchIf((e) => e.status === 404, () => Effect.succeed(Option.none()))),
        latestAttestation(c, a.agentId)
      ]).pipe(Effect.map(([s, latest]) => ({ status: Option.getOrUndefined(s), latest }))),
    { concurrency: 8 }
  )

/** Up's agents and the tenant connections that read their verifiers. */
export interface Fleet {
  readonly pull: { readonly connections: Connections; readonly agents: ReadonlyArray<UpAgent> }
  /** Push agents and the connections to the verifier (absent without `--push`). */
  readonly push?: { readonly connections: Connections; readonly agents: ReadonlyArray<UpPushAgent> } | undefined
}

export const watchStatus = (fleet: Fleet, o: WatchOptions) =>
  Effect.gen(function*() {
    const pullAgents = fleet.pull.agents.map(watchedPull)
    const pushAgents = (fleet.push?.agents ?? []).map(watchedPush)
    const agents = [...pullAgents, ...pushAgents]
    const pushMemory = new Map<number, PushMemory>()
    const region = o.interactive ? o.region : undefined
    for (const t of o.tamper) {
      if (findAgent(agents, t) === undefined) yield* o.say(`--tamper ${t}: no such agent (give its number 1-${agents.length} or its uuid)`)
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
      const statuses = new Map(yield* verifierBulk(fleet.pull.connections))
      const pushed = fleet.push === undefined ? [] : yield* pushStatuses(fleet.push.connections, pushAgents)
      const rows = [
        ...pullAgents.map((a) => pullRow(a, statuses.get(a.agentId))),
        ...pushAgents.map((a, i) => {
          const { memory, row } = pushRow(a, pushed[i]?.status, pushed[i]?.latest, pushMemory.get(a.n) ?? { evaluation: null, failure: null })
          pushMemory.set(a.n, memory)
          return row
        })
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
