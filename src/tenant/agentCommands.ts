/**
 * The verifier-side agent commands: `status`, `list`, `bulkinfo`, `stop`, `reactivate`, `delete`
 * (spec §4.1), rendered for a person (state name and number, attestations, ages, last failure) or
 * as the verifier's own JSON with --json.
 */
import { Clock, Duration, Effect, Schedule } from "effect"
import type { AnyAgentStatus } from "../../schemas/Verifier.js"
import { UsageError } from "../config/usageError.js"
import { isOperationalState, stateName } from "../attestation/states.js"
import type { Connections } from "./connect.js"
import { type RegistrarEntry, registrarEntries } from "./registrarCommands.js"
import { acceptanceOf, failureText, isPushStatus, stateLabel, stateText, verdictOf } from "./agentStatus.js"
import { age, fields, table } from "./render.js"
import type { Output } from "./run.js"


const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => ms / 1000)

export const verifierStatus = (c: Connections, agentId: string) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    return yield* c.call("verifier", v.url, `status of agent ${agentId}`, v.api.agents.show({ path: { agent_id: agentId } }))
  })

const lastFailure = (s: AnyAgentStatus): string => failureText(s, { severity: true }) ?? "none"

/**
 * One agent's status for a person. A push agent shows its model, its acceptance as its state, the
 * verdict and number of its latest attestation and when its last failure was, and no address (it
 * listens on none); a pull agent its operational state, the verdict of its latest quote and address.
 */
export const statusText = (agentId: string, s: AnyAgentStatus, now: number): string => {
  const push = isPushStatus(s)
  const verdict = verdictOf(s)
  return fields([
    ["agent", agentId],
    ["model", push ? "push (sends its evidence, API 3.0)" : "pull (the verifier asks it for quotes)"],
    ["state", push ? acceptanceOf(s) : stateLabel(s.operational_state)],
    ...(!push && "attestation_status" in s ? [["attestation", s.attestation_status] as const] : []),
    ["latest verdict", push && s.last_attestation_index != null ? `${verdict} (attestation ${s.last_attestation_index})` : verdict],
    ["attestations", String(s.attestation_count)],
    ["last success", age(now, s.last_successful_attestation)],
    [push ? "last attestation" : "last quote", age(now, s.last_received_quote)],
    ["last failure", push && s.last_failure_at ? `${lastFailure(s)} (${age(now, s.last_failure_at)})` : lastFailure(s)],
    ...(push ? [] : [["address", `${s.ip}:${s.port}`] as const]),
    ["algorithms", s.hash_alg === "" ? "(none yet)" : `${s.hash_alg}, ${s.enc_alg}, ${s.sign_alg}`],
    ["verifier", `${s.verifier_id} (${s.verifier_ip}:${s.verifier_port})`]
  ])
}

export const status = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const s = yield* verifierStatus(c, agentId)
    const now = yield* nowSeconds
    yield* out.show({ agent_id: agentId, state_name: isPushStatus(s) ? acceptanceOf(s) : isOperationalState(s.operational_state) ? stateName[s.operational_state] : "unknown", ...s }, () => statusText(agentId, s, now))
  })

/** Every agent's status at the verifier (`?bulk=true`), in the verifier's order. */
export const verifierBulk = (c: Connections) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    const r = yield* c.call("verifier", v.url, "list agents", v.api.agents.list({ urlParams: { bulk: "true" } }))
    if ("uuids" in r && Array.isArray(r.uuids)) {
      // an older verifier that ignores bulk: one status per id
      const ids = (r.uuids as ReadonlyArray<ReadonlyArray<string>>).map((u) => u[0]!)
      const statuses = yield* Effect.forEach(ids, (id) => verifierStatus(c, id), { concurrency: 8 })
      return ids.map((id, i) => [id, statuses[i]!] as const)
    }
    return Object.entries(r as Record<string, AnyAgentStatus>)
  })

export const bulkinfo = (c: Connections, out: Output) =>
  Effect.gen(function*() {
    const entries = yield* verifierBulk(c)
    const now = yield* nowSeconds
    yield* out.show(Object.fromEntries(entries), () =>
      entries.length === 0 ? "no agents at the verifier" : entries.map(([id, s]) => statusText(id, s, now)).join("\n\n"))
  })

/** What `--state` selects: a pull agent's operational state, or an acceptance (push agents' state; any agent's attestation_status). */
export type StateFilter = { readonly state: number } | { readonly acceptance: "PASS" | "FAIL" | "TIMEOUT" | "PENDING" }

const ACCEPTANCES = ["PASS", "FAIL", "TIMEOUT", "PENDING"] as const

/** `--state` as a number, a state name (case and spaces ignored: "get quote", "GET_QUOTE", "3") or an acceptance (pass, fail, timeout, pending). */
export const parseStateFilter = (text: string): Effect.Effect<StateFilter, UsageError> => {
  if (/^\d+$/.test(text) && isOperationalState(Number(text))) return Effect.succeed({ state: Number(text) })
  const norm = (s: string) => s.toLowerCase().replace(/[^a-z]/g, "")
  for (let n = 0; n <= 10; n++) {
    const name = stateName[n as keyof typeof stateName]
    if (norm(name) === norm(text) || norm(name.replace("(retry)", "retry")) === norm(text)) return Effect.succeed({ state: n })
  }
  const acceptance = ACCEPTANCES.find((a) => norm(a) === norm(text))
  if (acceptance !== undefined) return Effect.succeed({ acceptance })
  const names = Object.entries(stateName).map(([n, s]) => `${n} ${s}`).join(", ")
  return Effect.fail(new UsageError({ message: `--state ${text}: not a state; one of ${names}, or an attestation status ${ACCEPTANCES.join(", ")}` }))
}

const matches = (filter: StateFilter | undefined, s: AnyAgentStatus | undefined) =>
  filter === undefined || (s !== undefined && ("state" in filter
    ? !isPushStatus(s) && s.operational_state === filter.state
    : "attestation_status" in s && s.attestation_status === filter.acceptance))

const filterText = (filter: StateFilter) => ("state" in filter ? `state ${stateLabel(filter.state)}` : `attestation status ${filter.acceptance}`)

export const list = (c: Connections, out: Output, state: StateFilter | undefined) =>
  Effect.gen(function*() {
    const [atVerifier, atRegistrar] = yield* Effect.all([verifierBulk(c), registrarEntries(c)], { concurrency: 2 })
    const now = yield* nowSeconds
    const registrar = new Map<string, RegistrarEntry>(atRegistrar.map((e) => [e.agent_id, e]))
    const ids = [...atVerifier.map(([id]) => id), ...atRegistrar.map((e) => e.agent_id).filter((id) => !atVerifier.some(([v]) => v === id))]
    const verifier = new Map(atVerifier)
    const rows = ids
      .map((id) => ({ id, v: verifier.get(id), r: registrar.get(id) }))
      .filter((row) => matches(state, row.v))
    const json = rows.map(({ id, r, v }) => ({
      agent_id: id,
      verifier: v === undefined ? null : {
        attestation_model: isPushStatus(v) ? "push" : "pull",
        operational_state: v.operational_state,
        state: stateText(v),
        ...("attestation_status" in v ? { attestation_status: v.attestation_status } : {}),
        verdict: verdictOf(v),
        attestation_count: v.attestation_count,
        last_successful_attestation: v.last_successful_attestation,
        last_event_id: v.last_event_id,
        last_failure: failureText(v)
      },
      registrar: r === undefined ? null : { active: r.active }
    }))
    yield* out.show(json, () =>
      rows.length === 0
        ? state === undefined ? "no agents at the verifier or the registrar" : `no agents in ${filterText(state)}`
        : table(
          ["agent", "verifier state", "verdict", "attestations", "last success", "last failure", "registrar"],
          rows.map(({ id, r, v }) => [
            id,
            v === undefined ? "-" : stateText(v),
            v === undefined ? "-" : verdictOf(v),
            v === undefined ? "-" : String(v.attestation_count),
            v === undefined ? "-" : age(now, v.last_successful_attestation),
            v === undefined ? "-" : lastFailure(v),
            r === undefined ? "-" : r.active ? "active" : "not activated"
          ])
        ))
  })

export const stop = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    yield* c.call("verifier", v.url, `stop agent ${agentId}`, v.api.agents.stop({ path: { agent_id: agentId } }))
    yield* out.show({ agent_id: agentId, stopped: true }, () => `agent ${agentId} stopped at the verifier (no more quotes until reactivate)`)
  })

export const reactivate = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    yield* c.call("verifier", v.url, `reactivate agent ${agentId}`, v.api.agents.reactivate({ path: { agent_id: agentId } }))
    yield* out.show({ agent_id: agentId, reactivated: true }, () => `agent ${agentId} reactivated at the verifier`)
  })

/**
 * DELETE at the verifier; when it answers 202 (the agent is TERMINATED for the process polling it),
 * waits up to `verify_timeout` for it to be gone.
 */
export const removeAtVerifier = (c: Connections, agentId: string) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    const outcome = yield* c.call("verifier", v.url, `delete agent ${agentId}`, v.api.agents.remove({ path: { agent_id: agentId } }))
    if (outcome === "deleted") return "deleted" as const
    const gone = verifierStatus(c, agentId).pipe(
      Effect.as(false),
      Effect.catchIf((e) => e.status === 404, () => Effect.succeed(true)),
      Effect.repeat({ until: (g) => g, schedule: Schedule.spaced(Duration.seconds(c.settings.options.retry_interval)) }),
      Effect.timeoutOption(Duration.seconds(c.settings.options.verify_timeout))
    )
    return (yield* gone)._tag === "Some" ? "deleted" as const : "terminating" as const
  })

export const remove = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const result = yield* removeAtVerifier(c, agentId)
    yield* out.show({ agent_id: agentId, result }, () =>
      result === "deleted"
        ? `agent ${agentId} deleted at the verifier`
        : `agent ${agentId} is terminating at the verifier (state 8); the verifier polling it removes it`)
  })
