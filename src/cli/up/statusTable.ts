/**
 * `attest up`'s live status: one row per agent (number, model, id, state, last evaluation,
 * attestations, last success, last failure). A pull agent's state is the pull loop's (Keylime's
 * operational state); a push agent's is its acceptance as the v2 status words it (PASS, FAIL after
 * a failed attestation, TIMEOUT after a missed deadline, PENDING before the first), with the
 * verdict of its latest attestation (pass, fail, pending) and a failure's type. On a terminal the table is redrawn in place; otherwise a plain line is printed for
 * each agent whose state or failure changed, so a log or a pipe reads as a history.
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
  /** Push: the verdict of the latest attestation (pass, fail, pending); pull: null (the loop keeps none). */
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
}

const age = (now: number, at: number | null): string => {
  if (at === null) return "never"
  const s = Math.max(0, Math.round(now - at))
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`
}

const HEADERS = ["#", "model", "agent", "state", "last evaluation", "attestations", "last success", "last failure"] as const

const stateCell = (r: StatusRow) => (r.state === null ? r.stateName : `${r.stateName} (${r.state})`)

const cells = (r: StatusRow, now: number): ReadonlyArray<string> => [
  String(r.n),
  r.model,
  r.agentId,
  stateCell(r),
  r.evaluation ?? "-",
  String(r.attestations),
  age(now, r.lastSuccess),
  r.lastFailure ?? "-"
]

/** The table as lines, columns padded to their widest cell (the failure column is last, unpadded). */
export const renderTable = (rows: ReadonlyArray<StatusRow>, now: number): ReadonlyArray<string> => {
  const body = rows.map((r) => cells(r, now))
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...body.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) =>
    c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(HEADERS), ...body.map(line)]
}

/** What a plain (non-terminal) output prints for a row: only when its state, verdict or failure changed. */
export const changeLine = (before: StatusRow | undefined, after: StatusRow): string | null => {
  if (
    before !== undefined && before.state === after.state && before.stateName === after.stateName &&
    before.evaluation === after.evaluation && before.lastFailure === after.lastFailure
  ) return null
  const failure = after.lastFailure === null ? "" : `, last failure ${after.lastFailure}`
  const evaluation = after.evaluation === null ? "" : `, last evaluation ${after.evaluation}`
  const model = after.model === "push" ? "push, " : ""
  return `agent ${after.n}  ${after.agentId}  ${model}${stateCell(after)}${evaluation}, ${after.attestations} attestations${failure}`
}

/** ANSI: move the cursor up over the previous drawing and clear to the end of the screen. */
export const redraw = (previousLines: number, lines: ReadonlyArray<string>): string =>
  (previousLines > 0 ? `\x1b[${previousLines}A\x1b[J` : "") + lines.join("\n") + "\n"
