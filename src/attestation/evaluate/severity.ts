/**
 * Severity of attestation failures, as Keylime's `[verifier] severity_labels` / `severity_policy`
 * define it (keylime-wire.md §2): labels from lowest to highest; rules `{event_id, severity_label}`
 * tried in order, the first whose regular expression matches the WHOLE event id wins; no match →
 * the highest label. An irrecoverable failure always gets the highest label. The verdict's
 * highest failure (the first one of the highest level) gives the agent's `severity_level` and
 * `last_event_id`; polling stops when a failure is irrecoverable or the highest level is the maximum.
 * Rules are compiled once (when the configuration is read), never per attestation.
 */
import { Data, Either, Schema } from "effect"
import type { Failure } from "../../../schemas/Evidence.js"

export interface SeverityLabel {
  readonly name: string
  /** Position in `severity_labels` (0 = lowest); what the agent's `severity_level` stores. */
  readonly level: number
}

export interface SeverityRuleConfig {
  readonly event_id: string
  readonly severity_label: string
}

export interface SeverityPolicy {
  readonly labels: ReadonlyArray<SeverityLabel>
  readonly max: SeverityLabel
  readonly rules: ReadonlyArray<{ readonly eventId: RegExp; readonly label: SeverityLabel }>
  /** Event id → label, filled as ids are seen (a verifier meets a few dozen distinct ids). */
  readonly memo: Map<string, SeverityLabel>
}

export const DEFAULT_SEVERITY_LABELS: ReadonlyArray<string> = ["info", "notice", "warning", "error", "critical", "alert", "emergency"]
export const DEFAULT_SEVERITY_RULES: ReadonlyArray<SeverityRuleConfig> = [{ event_id: ".*", severity_label: "emergency" }]

/** `severity_labels` / `severity_policy` that cannot be used: which option, which entry, why. */
export class SeverityConfigError extends Data.TaggedError("SeverityConfigError")<{
  readonly option: "severity_labels" | "severity_policy"
  readonly reason: string
}> {
  override get message(): string {
    return `[verifier] ${this.option}: ${this.reason}`
  }
}

/** Python `re` syntax that JavaScript spells differently (named groups). */
const fromPython = (re: string): string => re.replace(/\(\?P</g, "(?<").replace(/\(\?P=(\w+)\)/g, "\\k<$1>")

/**
 * The policy from the two options. Unlike Keylime (which logs and falls back to the highest label
 * at match time), a rule naming an unknown label or an invalid expression is refused here, so a
 * typo stops start-up instead of silently raising every event to the maximum.
 */
export const makeSeverityPolicy = (
  labelNames: ReadonlyArray<string> = DEFAULT_SEVERITY_LABELS,
  rules?: ReadonlyArray<SeverityRuleConfig>
): Either.Either<SeverityPolicy, SeverityConfigError> => {
  if (labelNames.length === 0) return Either.left(new SeverityConfigError({ option: "severity_labels", reason: "needs at least one label" }))
  const labels = labelNames.map((name, level): SeverityLabel => ({ name, level }))
  const byName = new Map<string, SeverityLabel>()
  for (const l of labels) {
    if (byName.has(l.name)) return Either.left(new SeverityConfigError({ option: "severity_labels", reason: `label '${l.name}' appears twice` }))
    byName.set(l.name, l)
  }
  const max = labels[labels.length - 1]!
  // Keylime's default policy: every event gets the highest of the configured labels.
  const ruleList = rules === undefined || rules.length === 0 ? [{ event_id: ".*", severity_label: max.name }] : rules
  const compiled: Array<{ eventId: RegExp; label: SeverityLabel }> = []
  for (const [i, r] of ruleList.entries()) {
    const label = byName.get(r.severity_label)
    if (label === undefined) {
      return Either.left(
        new SeverityConfigError({
          option: "severity_policy",
          reason: `rule ${i} names severity_label '${r.severity_label}', which is not one of severity_labels (${labelNames.join(", ")})`
        })
      )
    }
    let eventId: RegExp
    try {
      eventId = new RegExp(`^(?:${fromPython(r.event_id)})$`)
    } catch (e) {
      return Either.left(new SeverityConfigError({ option: "severity_policy", reason: `rule ${i}: event_id '${r.event_id}' is not a valid regular expression (${String(e)})` }))
    }
    compiled.push({ eventId, label })
  }
  return Either.right({ labels, max, rules: compiled, memo: new Map() })
}

const decodeRules = Schema.decodeUnknownEither(
  Schema.parseJson(Schema.Array(Schema.Struct({ event_id: Schema.String, severity_label: Schema.String })))
)

/**
 * The policy from the `[verifier]` options as configured: `severity_policy` is JSON text (as in
 * Keylime's verifier.conf); text that is not a list of `{event_id, severity_label}` is refused here.
 */
export const severityPolicyFromOptions = (options: {
  readonly severity_labels: ReadonlyArray<string>
  readonly severity_policy: string
}): Either.Either<SeverityPolicy, SeverityConfigError> =>
  Either.flatMap(
    Either.mapLeft(
      decodeRules(options.severity_policy),
      (e) => new SeverityConfigError({ option: "severity_policy", reason: `must be a JSON list of {"event_id", "severity_label"}: ${e.message}` })
    ),
    (rules) => makeSeverityPolicy(options.severity_labels, rules)
  )

/** Keylime's defaults: seven labels, every event `emergency` (so any failure stops polling). */
export const defaultSeverityPolicy: SeverityPolicy = Either.getOrThrow(makeSeverityPolicy())

const MEMO_MAX = 4096

/** The label of one event id (first matching rule; none → the highest label). */
export const severityOf = (policy: SeverityPolicy, eventId: string): SeverityLabel => {
  const hit = policy.memo.get(eventId)
  if (hit !== undefined) return hit
  let label = policy.max
  for (const r of policy.rules) {
    if (r.eventId.test(eventId)) {
      label = r.label
      break
    }
  }
  // Event ids with PCR numbers are few; the bound only guards against unbounded ids (e.g. a TEE verifier's).
  if (policy.memo.size < MEMO_MAX) policy.memo.set(eventId, label)
  return label
}

/**
 * Keylime's recoverability, by component: a failure of the quote itself, of its algorithms or of
 * the request (`qoute_validation.*`, `internal.*`, `default.*`, TEE evidence: Keylime's
 * `tee_attestation.*`, src/tee's too) ends the checks early and is irrecoverable; PCR, IMA and
 * measured-boot findings are recoverable.
 */
const IRRECOVERABLE = ["qoute_validation.", "internal.", "default.", "tee_attestation."]

export const isRecoverable = (type: string): boolean => !IRRECOVERABLE.some((p) => type.startsWith(p))

export interface RatedFailure {
  readonly failure: Failure
  readonly severity: SeverityLabel
  readonly recoverable: boolean
}

export interface SeverityVerdict {
  /** The failures in order, each with its label (irrecoverable ones at the highest label). */
  readonly rated: ReadonlyArray<RatedFailure>
  /** The first failure of the highest level: its level and type become `severity_level` and `last_event_id`. */
  readonly highest: RatedFailure | undefined
  /** Every failure is recoverable. */
  readonly recoverable: boolean
  /** Keylime: `not recoverable or highest == max label` → the agent's polling stops. */
  readonly stopPolling: boolean
}

const NO_FAILURES: SeverityVerdict = { rated: [], highest: undefined, recoverable: true, stopPolling: false }

export const rateFailures = (policy: SeverityPolicy, failures: ReadonlyArray<Failure>): SeverityVerdict => {
  if (failures.length === 0) return NO_FAILURES
  const rated: Array<RatedFailure> = []
  let highest: RatedFailure | undefined
  let recoverable = true
  for (const failure of failures) {
    const ok = isRecoverable(failure.type)
    const r: RatedFailure = { failure, severity: ok ? severityOf(policy, failure.type) : policy.max, recoverable: ok }
    if (!ok) recoverable = false
    if (highest === undefined || r.severity.level > highest.severity.level) highest = r
    rated.push(r)
  }
  return { rated, highest, recoverable, stopPolling: !recoverable || highest!.severity.level === policy.max.level }
}

/** What an agent row keeps: the highest severity seen and the event that raised it (null until a failure). */
export interface AgentSeverity {
  readonly severity_level: number | null
  readonly last_event_id: string | null
}

/** Keylime updates both fields only when the new highest level exceeds the stored one. */
export const escalate = (stored: AgentSeverity, verdict: SeverityVerdict): AgentSeverity => {
  const h = verdict.highest
  if (h === undefined) return stored
  if (stored.severity_level !== null && stored.severity_level >= h.severity.level) return stored
  return { severity_level: h.severity.level, last_event_id: h.failure.type }
}
