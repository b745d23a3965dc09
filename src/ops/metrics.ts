/**
 * The one registry of attest's metrics: Effect `Metric`s (Effect's global registry, which
 * `GET /metrics` renders through src/ops/prometheus.ts), each declared once here with its name,
 * help text and labels (`metricsCatalog` lists them), and the functions that record them. Every
 * recorder has an Effect form (`recordX(...)`: `Effect<void>`) and a synchronous one
 * (`unsafeRecordX(...)`) for pure loops; both update the same series. A labelled series is made once
 * and cached, so recording is a map lookup and an add (bench/metrics.ts measures it).
 *
 * Registrar (wired): `recordRegistration(result)` and `recordActivation(result)` in
 * src/registrar/Registrar.ts; HTTP requests by listener, method, route and status through the
 * platform (src/http/requestMetrics.ts).
 *
 * Verifier: the pull loop (src/verifier/pull/agentLoop.ts), AgentClient, Agents (stop, delete),
 * the notifiers (src/verifier/pull/NotifiersLive.ts) and verify/evidence (src/verifier/stateless/Stateless.ts,
 * `recordAttestation("evidence", …)`) make these calls; push still to wire (each line is the whole
 * change at its place):
 *
 *   // pull loop (Poller), after each verdict; push attestations with "push", verify/evidence with "evidence"
 *   yield* recordAttestation("pull", evaluation.failures.length === 0, evaluation.failures.map((f) => f.type))
 *   if (evaluation.failures.length === 0) yield* observeFreshness(agentId, nowSeconds)   // seconds since the epoch
 *   // wherever operational_state is written (AgentRepo.setState/recordVerdict callers), and on delete:
 *   yield* setAgentState(agentId, newState)        // OperationalState number
 *   yield* forgetAgent(agentId)                    // agent deleted: its series are retired
 *   // the fleet's oldest verified quote, read from the database periodically (verifier/domain/freshnessGauge.ts)
 *   yield* setOldestVerifiedQuote(epochSeconds)    // undefined: no active pull agent
 *   // the evaluator's stages (quote, pcrs, ima, boot): every caller of evaluateEvidence runs it
 *   // through src/ops/stages.ts `evaluateTimed`, which fills attest_check_duration_seconds{check}
 *   yield* observeCheckDuration("ima", seconds)                  // when the duration is already known
 *   // AgentClient, when a request to an agent fails:
 *   yield* recordAgentRequestError("timeout")      // "timeout" | "connection" | "tls" | "http_status" | "decode"
 *   // notifiers (notify/*): after each enqueue/dequeue, and per failed or completed delivery
 *   yield* setNotificationQueueDepth("webhook", depth)
 *   yield* recordNotificationDelivery("webhook", false)          // true when delivered
 *   // push model (src/verifier/push): sessions and PoP tokens
 *   yield* recordPushSession("created")            // "created" | "refused"
 *   yield* recordPushToken("issued")               // "issued" | "accepted" | "rejected" | "expired"
 *   yield* setActivePushTokens(count)
 *
 * and the server adds `MetricsServer.fromSection(section, "verifier-metrics")` (src/http/MetricsListener.ts).
 * Database pool use: src/db/Sql.ts owns each pg.Pool and registers it with `watchDbPool`; the
 * scrape reads total, idle and waiting (SQLite: its one connection).
 */
import { Duration, Effect, Metric, MetricBoundaries, MetricKey, MetricLabel } from "effect"
import { readdirSync } from "node:fs"
import { type OperationalState, stateName } from "../attestation/states.js"
import { onScrape } from "./prometheus.js"

export type MetricType = "counter" | "gauge" | "histogram"

export interface CatalogEntry {
  readonly name: string
  readonly type: MetricType
  readonly help: string
  readonly labels: ReadonlyArray<string>
  /** Which server records it. */
  readonly component: "registrar" | "verifier" | "server"
}

const entries: Array<CatalogEntry> = []

/** Every metric attest records, with its help text and labels. */
export const metricsCatalog: ReadonlyArray<CatalogEntry> = entries

const NO_TAGS: ReadonlyArray<MetricLabel.MetricLabel> = []

type AnyKey = MetricKey.MetricKey.Counter<number> | MetricKey.MetricKey.Gauge<number> | MetricKey.MetricKey.Histogram
type MetricOf<K> = K extends MetricKey.MetricKey.Counter<number> ? Metric.Metric.Counter<number>
  : K extends MetricKey.MetricKey.Gauge<number> ? Metric.Metric.Gauge<number>
  : Metric.Metric.Histogram<number>

/** A metric family: one series per label values, made on first use and cached. */
export interface Family<M> {
  readonly entry: CatalogEntry
  readonly series: (...values: ReadonlyArray<string>) => M
}

const family = <K extends AnyKey>(key: K, entry: CatalogEntry): Family<MetricOf<K>> => {
  entries.push(entry)
  // one map level per label: a lookup allocates nothing (no joined key)
  type Level = Map<string, Level | MetricOf<K>>
  const root: Level = new Map()
  let unlabelled: MetricOf<K> | undefined
  const make = (values: ReadonlyArray<string>): MetricOf<K> => {
    const labels = entry.labels.map((name, i) => MetricLabel.make(name, values[i] ?? ""))
    return Metric.fromMetricKey(MetricKey.taggedWithLabels(key as MetricKey.MetricKey.Counter<number>, labels)) as unknown as MetricOf<K>
  }
  const series = (...values: ReadonlyArray<string>): MetricOf<K> => {
    if (values.length === 0) return (unlabelled ??= make(values))
    let level = root
    for (let i = 0; i < values.length - 1; i++) {
      let next = level.get(values[i]!) as Level | undefined
      if (next === undefined) {
        next = new Map()
        level.set(values[i]!, next)
      }
      level = next
    }
    const last = values[values.length - 1]!
    let m = level.get(last) as MetricOf<K> | undefined
    if (m === undefined) {
      m = make(values)
      level.set(last, m)
    }
    return m
  }
  return { entry, series }
}

const counter = (name: string, help: string, labels: ReadonlyArray<string>, component: CatalogEntry["component"]) =>
  family(MetricKey.counter(name, { description: help, incremental: true }), { name, type: "counter", help, labels, component })

const gauge = (name: string, help: string, labels: ReadonlyArray<string>, component: CatalogEntry["component"]) =>
  family(MetricKey.gauge(name, { description: help }), { name, type: "gauge", help, labels, component })

const histogram = (name: string, help: string, labels: ReadonlyArray<string>, boundaries: ReadonlyArray<number>, component: CatalogEntry["component"]) =>
  family(MetricKey.histogram(name, MetricBoundaries.fromIterable(boundaries), help), { name, type: "histogram", help, labels, component })

/** Seconds: 100 µs (a quote check) to 10 s (a long IMA list or a slow request). */
export const DURATION_BUCKETS: ReadonlyArray<number> = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
]

// --- the catalog ------------------------------------------------------------------------------

export const Metrics = {
  registrations: counter("attest_registrations_total", "Agent registrations at the registrar, by result", ["result"], "registrar"),
  activations: counter("attest_activations_total", "Agent activations (credential activation answers) at the registrar, by result", ["result"], "registrar"),
  httpRequests: counter(
    "attest_http_requests_total",
    "HTTP requests answered, by listener, method, route template (unmatched: no route) and status",
    ["listener", "method", "route", "status"],
    "server"
  ),
  httpDuration: histogram("attest_http_request_duration_seconds", "Time to answer an HTTP request, by listener and route template", ["listener", "route"], DURATION_BUCKETS, "server"),
  dbPool: gauge("attest_db_pool_connections", "Database pool connections, by database and state (total, idle, waiting clients)", ["database", "state"], "server"),
  attestations: counter("attest_attestations_total", "Attestations judged, by model (pull, push, evidence) and result (valid, invalid)", ["model", "result"], "verifier"),
  attestationFailures: counter(
    "attest_attestation_failures_total",
    "Attestations that failed with a failure type (each type counted once per attestation), by model and failure type",
    ["model", "failure_type"],
    "verifier"
  ),
  verdictWrites: counter(
    "attest_verdict_writes_total",
    "Pull-loop writes to agents' rows (verdicts, retries, failures, state changes) by result: won, lost (a newer loop or an admin change came first: nothing written), error",
    ["result"],
    "verifier"
  ),
  dbTransactions: counter("attest_db_transactions_total", "Database transactions by purpose; loop_writes: those that stored the pull loops' writes (on PostgreSQL one per batch)", ["purpose"], "verifier"),
  agents: gauge("attest_agents", "Agents by operational state", ["state"], "verifier"),
  freshness: gauge("attest_agent_attestation_age_seconds", "Seconds since the agent's last successful attestation, as of the scrape", ["agent_id"], "verifier"),
  oldestVerifiedQuote: gauge(
    "attest_oldest_verified_quote_seconds",
    "Seconds since the oldest last verified quote among active pull agents (one never verified counts from its creation), read from the database whichever process polls them; 0 without active pull agents",
    [],
    "verifier"
  ),
  checkDuration: histogram(
    "attest_check_duration_seconds",
    "Time to check one attestation's stage, by check: quote (signature, nonce, clock, NK binding), pcrs (tpm_policy), ima (the IMA list), boot (the measured-boot log)",
    ["check"],
    DURATION_BUCKETS,
    "verifier"
  ),
  agentRequestErrors: counter("attest_agent_request_errors_total", "Failed requests from the verifier to agents, by kind", ["kind"], "verifier"),
  notificationQueue: gauge("attest_notification_queue_depth", "Revocation notifications waiting for delivery, by notifier", ["notifier"], "verifier"),
  notificationDeliveries: counter(
    "attest_notification_deliveries_total",
    "Revocation notification delivery attempts, by notifier and result (delivered, failed)",
    ["notifier", "result"],
    "verifier"
  ),
  pushSessions: counter("attest_push_sessions_total", "Push-model attestation sessions, by result (created, refused)", ["result"], "verifier"),
  pushTokens: counter("attest_push_tokens_total", "Push-model PoP tokens, by event (issued, accepted, rejected, expired)", ["event"], "verifier"),
  pushTokensActive: gauge("attest_push_tokens_active", "Push-model PoP tokens currently valid", [], "verifier"),
  processMemory: gauge("attest_process_memory_bytes", "This process's memory as of the scrape, by kind (rss, heap_used, heap_total, external)", ["kind"], "server"),
  processOpenFds: gauge("attest_process_open_fds", "File descriptors this process holds open as of the scrape (Linux: /proc/self/fd)", [], "server")
} as const

// --- registrar ----------------------------------------------------------------------------------

export type RegistrationResult =
  | "registered"
  | "re_registered"
  | "staged"
  | "invalid_data"
  | "different_identity"
  | "concurrent"
  | "database_error"

export type ActivationResult = "activated" | "promoted" | "repeated" | "auth_tag_mismatch" | "not_found" | "raced" | "database_error"

export const unsafeRecordRegistration = (result: RegistrationResult): void => Metrics.registrations.series(result).unsafeUpdate(1, NO_TAGS)
export const recordRegistration = (result: RegistrationResult): Effect.Effect<void> => Effect.sync(() => unsafeRecordRegistration(result))

export const unsafeRecordActivation = (result: ActivationResult): void => Metrics.activations.series(result).unsafeUpdate(1, NO_TAGS)
export const recordActivation = (result: ActivationResult): Effect.Effect<void> => Effect.sync(() => unsafeRecordActivation(result))

// --- HTTP and database --------------------------------------------------------------------------

/** Requests that matched no route are counted under this route label. */
export const UNMATCHED_ROUTE = "unmatched"

export const unsafeRecordHttpRequest = (listener: string, method: string, route: string, status: number, seconds: number): void => {
  Metrics.httpRequests.series(listener, method, route, String(status)).unsafeUpdate(1, NO_TAGS)
  Metrics.httpDuration.series(listener, route).unsafeUpdate(seconds, NO_TAGS)
}

export interface DbPoolUse {
  readonly total: number
  readonly idle: number
  readonly waiting: number
}

export const unsafeObserveDbPool = (database: string, use: DbPoolUse): void => {
  Metrics.dbPool.series(database, "total").unsafeUpdate(use.total, NO_TAGS)
  Metrics.dbPool.series(database, "idle").unsafeUpdate(use.idle, NO_TAGS)
  Metrics.dbPool.series(database, "waiting").unsafeUpdate(use.waiting, NO_TAGS)
}
export const observeDbPool = (database: string, use: DbPoolUse): Effect.Effect<void> => Effect.sync(() => unsafeObserveDbPool(database, use))

const watchedPools = new Map<number, { readonly database: string; readonly read: () => DbPoolUse }>()
let nextPoolWatch = 0

/**
 * Reads a pool's use at every scrape (src/db/Sql.ts registers each database it opens); the returned
 * function stops it, when the layer closes the pool.
 */
export const watchDbPool = (database: string, read: () => DbPoolUse): () => void => {
  const id = nextPoolWatch++
  watchedPools.set(id, { database, read })
  return () => {
    watchedPools.delete(id)
  }
}

onScrape(() => {
  for (const { database, read } of watchedPools.values()) unsafeObserveDbPool(database, read())
})

// --- the process: memory and descriptors, read at each scrape (a leak shows as a slope) -------------

const countOpenFds = (): number | undefined => {
  try {
    return readdirSync("/proc/self/fd").length - 1 // the directory handle readdir itself opened
  } catch {
    return undefined // not Linux: the series is left out
  }
}

onScrape(() => {
  const m = process.memoryUsage()
  Metrics.processMemory.series("rss").unsafeUpdate(m.rss, NO_TAGS)
  Metrics.processMemory.series("heap_used").unsafeUpdate(m.heapUsed, NO_TAGS)
  Metrics.processMemory.series("heap_total").unsafeUpdate(m.heapTotal, NO_TAGS)
  Metrics.processMemory.series("external").unsafeUpdate(m.external, NO_TAGS)
  const fds = countOpenFds()
  if (fds !== undefined) Metrics.processOpenFds.series().unsafeUpdate(fds, NO_TAGS)
})

// --- verifier: attestations, agents, checks -----------------------------------------------------

export type AttestationModel = "pull" | "push" | "evidence"

const NO_FAILURES: ReadonlyArray<string> = []

export const unsafeRecordAttestation = (model: AttestationModel, valid: boolean, failureTypes: ReadonlyArray<string> = NO_FAILURES): void => {
  Metrics.attestations.series(model, valid ? "valid" : "invalid").unsafeUpdate(1, NO_TAGS)
  if (failureTypes.length === 0) return
  if (failureTypes.length === 1) {
    Metrics.attestationFailures.series(model, failureTypes[0]!).unsafeUpdate(1, NO_TAGS)
    return
  }
  // an IMA list can fail on thousands of entries with one type: the attestation counts once per type
  for (const type of new Set(failureTypes)) Metrics.attestationFailures.series(model, type).unsafeUpdate(1, NO_TAGS)
}
export const recordAttestation = (model: AttestationModel, valid: boolean, failureTypes: ReadonlyArray<string> = []): Effect.Effect<void> =>
  Effect.sync(() => unsafeRecordAttestation(model, valid, failureTypes))

/** Pull-loop writes stored (by result) in `transactions` transactions: a batch, or one write alone. */
export const unsafeRecordLoopWrites = (w: { readonly won: number; readonly lost: number; readonly failed: number }, transactions: number): void => {
  if (w.won > 0) Metrics.verdictWrites.series("won").unsafeUpdate(w.won, NO_TAGS)
  if (w.lost > 0) Metrics.verdictWrites.series("lost").unsafeUpdate(w.lost, NO_TAGS)
  if (w.failed > 0) Metrics.verdictWrites.series("error").unsafeUpdate(w.failed, NO_TAGS)
  if (transactions > 0) Metrics.dbTransactions.series("loop_writes").unsafeUpdate(transactions, NO_TAGS)
}

/** Prometheus label value of an operational state: Keylime's name in snake case ("get_quote_retry"). */
export const stateLabel = (state: OperationalState): string =>
  stateName[state].toLowerCase().replace(/[()]/g, "").trim().replace(/\s+/g, "_")

const ALL_STATES = Object.keys(stateName).map(Number) as ReadonlyArray<OperationalState>

/** The last state told for each agent, so a change moves one agent from its old state's count to the new one's. */
const agentStates = new Map<string, OperationalState>()

const touchStateFamily = (() => {
  let done = false
  return () => {
    if (done) return
    done = true
    // every state is listed (0 until an agent enters it), so a dashboard sees the whole family
    for (const s of ALL_STATES) Metrics.agents.series(stateLabel(s)).unsafeModify(0, NO_TAGS)
  }
})()

export const unsafeSetAgentState = (agentId: string, state: OperationalState): void => {
  touchStateFamily()
  const previous = agentStates.get(agentId)
  if (previous === state) return
  if (previous !== undefined) Metrics.agents.series(stateLabel(previous)).unsafeModify(-1, NO_TAGS)
  Metrics.agents.series(stateLabel(state)).unsafeModify(1, NO_TAGS)
  agentStates.set(agentId, state)
}
export const setAgentState = (agentId: string, state: OperationalState): Effect.Effect<void> => Effect.sync(() => unsafeSetAgentState(agentId, state))

/** Each agent's last successful attestation (epoch seconds); the gauge is its age at scrape time. */
const lastSuccess = new Map<string, { at: number; readonly gauge: Metric.Metric.Gauge<number> }>()

export const unsafeObserveFreshness = (agentId: string, lastSuccessEpochSeconds: number): void => {
  const known = lastSuccess.get(agentId)
  if (known !== undefined) known.at = lastSuccessEpochSeconds
  else lastSuccess.set(agentId, { at: lastSuccessEpochSeconds, gauge: Metrics.freshness.series(agentId) })
}
/** The agent attested successfully at `lastSuccessEpochSeconds`. */
export const observeFreshness = (agentId: string, lastSuccessEpochSeconds: number): Effect.Effect<void> =>
  Effect.sync(() => unsafeObserveFreshness(agentId, lastSuccessEpochSeconds))

onScrape((nowMillis) => {
  const now = nowMillis / 1000
  for (const entry of lastSuccess.values()) entry.gauge.unsafeUpdate(Math.max(0, now - entry.at), NO_TAGS)
})

/** The oldest verified quote among active pull agents (epoch seconds; undefined: none), as last read from the database. */
let oldestVerified: number | undefined
let oldestVerifiedKnown = false

/** The fleet's oldest verified quote as just read (src/verifier/domain/freshnessGauge.ts); the gauge is its age at scrape time. */
export const setOldestVerifiedQuote = (epochSeconds: number | undefined): Effect.Effect<void> =>
  Effect.sync(() => {
    oldestVerified = epochSeconds
    oldestVerifiedKnown = true
  })

onScrape((nowMillis) => {
  // not exposed until a process reads it (the registrar's, or a verifier whose database never answered)
  if (!oldestVerifiedKnown) return
  Metrics.oldestVerifiedQuote.series().unsafeUpdate(oldestVerified === undefined ? 0 : Math.max(0, nowMillis / 1000 - oldestVerified), NO_TAGS)
})

/** The agent is gone: it leaves its state's count and its freshness series is retired (NaN, not exposed). */
export const unsafeForgetAgent = (agentId: string): void => {
  const previous = agentStates.get(agentId)
  if (previous !== undefined) {
    Metrics.agents.series(stateLabel(previous)).unsafeModify(-1, NO_TAGS)
    agentStates.delete(agentId)
  }
  const fresh = lastSuccess.get(agentId)
  if (fresh !== undefined) {
    fresh.gauge.unsafeUpdate(Number.NaN, NO_TAGS)
    lastSuccess.delete(agentId)
  }
}
export const forgetAgent = (agentId: string): Effect.Effect<void> => Effect.sync(() => unsafeForgetAgent(agentId))

export type Check = "quote" | "ima" | "boot"

export const unsafeObserveCheckDuration = (check: Check, seconds: number): void => Metrics.checkDuration.series(check).unsafeUpdate(seconds, NO_TAGS)
export const observeCheckDuration = (check: Check, seconds: number): Effect.Effect<void> => Effect.sync(() => unsafeObserveCheckDuration(check, seconds))

/** Runs the effect and records how long it took (Clock time, so TestClock drives it in tests). */
export const timeCheck = (check: Check) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.timed(self).pipe(Effect.flatMap(([took, a]) => Effect.as(observeCheckDuration(check, Duration.toSeconds(took)), a)))

// --- verifier: agents, notifiers, push model ------------------------------------------------------

export type AgentRequestErrorKind = "timeout" | "connection" | "tls" | "http_status" | "decode"

export const unsafeRecordAgentRequestError = (kind: AgentRequestErrorKind): void => Metrics.agentRequestErrors.series(kind).unsafeUpdate(1, NO_TAGS)
export const recordAgentRequestError = (kind: AgentRequestErrorKind): Effect.Effect<void> => Effect.sync(() => unsafeRecordAgentRequestError(kind))

export const setNotificationQueueDepth = (notifier: string, depth: number): Effect.Effect<void> =>
  Effect.sync(() => Metrics.notificationQueue.series(notifier).unsafeUpdate(depth, NO_TAGS))

export const recordNotificationDelivery = (notifier: string, delivered: boolean): Effect.Effect<void> =>
  Effect.sync(() => Metrics.notificationDeliveries.series(notifier, delivered ? "delivered" : "failed").unsafeUpdate(1, NO_TAGS))

export const recordPushSession = (result: "created" | "refused"): Effect.Effect<void> =>
  Effect.sync(() => Metrics.pushSessions.series(result).unsafeUpdate(1, NO_TAGS))

export const recordPushToken = (event: "issued" | "accepted" | "rejected" | "expired"): Effect.Effect<void> =>
  Effect.sync(() => unsafeRecordPushToken(event))

/** The same, from code already running (a token accepted from memory on a push request's hot path). */
export const unsafeRecordPushToken = (event: "issued" | "accepted" | "rejected" | "expired"): void => Metrics.pushTokens.series(event).unsafeUpdate(1, NO_TAGS)

export const setActivePushTokens = (count: number): Effect.Effect<void> => Effect.sync(() => Metrics.pushTokensActive.series().unsafeUpdate(count, NO_TAGS))
