/**
 * `attest up`'s live status: one row per agent (number, model, id, state, verdict, attestations,
 * last success, last failure). A pull agent's state is the pull loop's (Keylime's operational
 * state); a push agent's is its acceptance as the v2 status words it (PASS, FAIL after a failed
 * attestation, TIMEOUT after a missed deadline, PENDING before the first). The verdict is that of
 * the agent's latest quote (pull) or completed attestation (push): pass, fail, or pending before
 * the first. On a terminal the table is drawn in the live region (liveRegion.ts) for the
 * terminal's width: when the full table does not fit, agent ids are shortened to 8 characters
 * and headers to fewer words, then each row is cut with an ellipsis; otherwise a plain line is printed for each agent whose state or failure
 * changed, so a log or a pipe reads as a history. With several verifier runners (cluster mode) a
 * `runner` column (and a runner in the change lines) names the runner whose loop polls each agent.
 */

export interface StatusRow {
  /** The agent's number in `attest up` (1-based; `--tamper <n>` names it). */
  readonly n: number
  /** Pull (the verifier asks for quotes) or push (the agent sends evidence; API 3.0). */
  readonly model: "pull" | "push"
  readonly agentId: string
  /**
   * Pull: Keylime's state name and number, e.g. "Get Quote" and 3. Push: the acceptance (PASS,
   * FAIL, TIMEOUT, PENDING) and null. Before the verifier knows the agent: a sentence and null.
   */
  readonly stateName: string
  readonly state: number | null
  /** The verdict of the latest quote (pull) or completed attestation (push); pending before the first; null when the verifier does not hold the agent. */
  readonly evaluation: "pass" | "fail" | "pending" | null
  readonly attestations: number
  /** Epoch seconds of the last successful attestation. */
  readonly lastSuccess: number | null
  /**
   * Type and detail of the last failure: pull, the event id and message, e.g.
   * "ima.validation.ima-ng.not_in_allowlist: /usr/bin/evil"; push, the failure reason of the last
   * failed attestation (policy_violation, broken_evidence_chain).
   */
  readonly lastFailure: string | null
  /** The runner whose loop polls the agent (`attest up --verifiers N`, cluster mode); absent or null otherwise. */
  readonly owner?: string | null
}

/** "12s ago", "3m ago", "2h ago"; "never" for none (the verifier writes 0 before the first). */
export const age = (now: number, at: number | null): string => {
  if (at === null || at <= 0) return "never"
  const s = Math.max(0, Math.round(now - at))
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`
}

const HEADERS = ["#", "model", "agent", "state", "verdict", "attestations", "last success", "last failure"] as const
/** The narrow table's headers: the same columns in fewer characters. */
const NARROW_HEADERS = ["#", "model", "agent", "state", "verdict", "count", "last ok", "last failure"] as const
/** A wide table keeps full ids while this much of the failure column is visible. */
const MIN_FAILURE_WIDTH = 30

const stateCell = (r: StatusRow) => (r.state === null ? r.stateName : `${r.stateName} (${r.state})`)

/** How many characters of an agent id a narrow table shows (as short commit ids do). */
export const SHORT_ID = 8

const cells = (r: StatusRow, now: number, shortIds: boolean, owners: boolean): ReadonlyArray<string> => [
  String(r.n),
  r.model,
  shortIds ? r.agentId.slice(0, SHORT_ID) : r.agentId,
  stateCell(r),
  r.evaluation ?? "-",
  String(r.attestations),
  age(now, r.lastSuccess),
  ...(owners ? [r.owner ?? "-"] : []),
  r.lastFailure ?? "-"
]

/** The header row, with the runner column before the last failure when runners own agents. */
const headersOf = (narrow: boolean, owners: boolean): ReadonlyArray<string> => {
  const h = narrow ? NARROW_HEADERS : HEADERS
  return owners ? [...h.slice(0, -1), "runner", h.at(-1)!] : h
}

const layout = (rows: ReadonlyArray<StatusRow>, now: number, narrow: boolean): ReadonlyArray<string> => {
  const owners = rows.some((r) => r.owner !== undefined && r.owner !== null)
  const headers = headersOf(narrow, owners)
  const body = rows.map((r) => cells(r, now, narrow, owners))
  const widths = headers.map((h, i) => Math.max(h.length, ...body.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) =>
    c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(headers), ...body.map(line)]
}

/**
 * The table as lines, columns padded to their widest cell (the failure column is last, unpadded).
 * Given the screen's width, agent ids are shortened when the full ones leave no room for the
 * failure column (the rows are then cut to the width by the live region).
 */
export const renderTable = (rows: ReadonlyArray<StatusRow>, now: number, columns = Number.POSITIVE_INFINITY): ReadonlyArray<string> => {
  const full = layout(rows, now, false)
  const fits = Math.max(...full.map((l) => l.length)) < columns
  const failureRoom = columns - full[0]!.indexOf("last failure")
  return fits || failureRoom >= MIN_FAILURE_WIDTH ? full : layout(rows, now, true)
}

/** What a plain (non-terminal) output prints for a row: only when its state, verdict or failure changed. */
export const changeLine = (before: StatusRow | undefined, after: StatusRow): string | null => {
  if (
    before !== undefined && before.state === after.state && before.stateName === after.stateName &&
    before.evaluation === after.evaluation && before.lastFailure === after.lastFailure && (before.owner ?? null) === (after.owner ?? null)
  ) return null
  const failure = after.lastFailure === null ? "" : `, last failure ${after.lastFailure}`
  const evaluation = after.evaluation === null ? "" : `, verdict ${after.evaluation}`
  const model = after.model === "push" ? "push, " : ""
  const owner = after.owner === undefined || after.owner === null ? "" : `, runner ${after.owner}`
  return `agent ${after.n}  ${after.agentId}  ${model}${stateCell(after)}${evaluation}, ${after.attestations} attestations${owner}${failure}`
}

