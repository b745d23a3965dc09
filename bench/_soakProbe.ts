/**
 * What bench/soak.ts reads of the verifier from outside it, so that no figure is the verifier's own
 * claim: its RSS and open descriptors from /proc, its heap from its /metrics (the one figure /proc
 * cannot give; its descriptor count there is set beside /proc's), and from its database
 * (a read-only SQLite connection, or a PostgreSQL client of its schema) the database's size, the
 * attestations recorded, and each agent's last verified attestation.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { createRequire } from "node:module"
import pg from "pg"

export const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1])
export const openFds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length

/** The series of a Prometheus text scrape, by name and labels as written (`attest_process_memory_bytes{kind="heap_used"}`). */
export const scrapeSeries = async (metricsUrl: string): Promise<Map<string, number>> => {
  const text = await (await fetch(metricsUrl)).text()
  const out = new Map<string, number>()
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$/.exec(line)
    if (m !== null) out.set(m[1]!, Number(m[2]))
  }
  return out
}

/** One agent as its database row tells it: when it last passed (ms since the epoch, 0 never), and whether it is in the state that attests. */
export interface AgentTimes {
  readonly agentId: string
  readonly model: "pull" | "push"
  readonly lastSuccessMs: number
  /** Pull: the stored second is floored, so the pass was up to this much later. */
  readonly resolutionMs: number
  readonly active: boolean
}

export interface DbProbe {
  /** Bytes the database takes: SQLite's pages (page_count × page_size, the WAL's included) or the schema's tables with their indexes and TOAST. */
  readonly sizeBytes: () => Promise<number>
  /** SQLite only: the main file and its WAL on disk. */
  readonly fileBytes: () => number | undefined
  /** Attestations recorded (attestation_count summed), pull and push. */
  readonly attestations: () => Promise<{ readonly pull: number; readonly push: number }>
  readonly agents: () => Promise<ReadonlyArray<AgentTimes>>
  readonly close: () => Promise<void>
}

const GET_QUOTE = 3

const PULL_ROWS = `SELECT a.agent_id, a.operational_state, a.last_successful_attestation, a.attestation_count FROM verifier_agents a
  WHERE NOT EXISTS (SELECT 1 FROM push_agents p WHERE p.agent_id = a.agent_id)`
const PUSH_ROWS = "SELECT agent_id, accept_attestations, last_success_at, attestation_count FROM push_agents"

interface PullRow {
  readonly agent_id: string
  readonly operational_state: number | string
  readonly last_successful_attestation: number | string
  readonly attestation_count: number | string
}
interface PushRow {
  readonly agent_id: string
  readonly accept_attestations: number | string
  readonly last_success_at: number | string | null
  readonly attestation_count: number | string
}

const timesOf = (pull: ReadonlyArray<PullRow>, push: ReadonlyArray<PushRow>): Array<AgentTimes> => [
  ...pull.map((r) => ({ agentId: r.agent_id, model: "pull" as const, lastSuccessMs: Number(r.last_successful_attestation) * 1000, resolutionMs: 1000, active: Number(r.operational_state) === GET_QUOTE })),
  ...push.map((r) => ({ agentId: r.agent_id, model: "push" as const, lastSuccessMs: Number(r.last_success_at ?? 0), resolutionMs: 0, active: Number(r.accept_attestations) === 1 }))
]
const sum = (rows: ReadonlyArray<{ readonly attestation_count: number | string }>) => rows.reduce((t, r) => t + Number(r.attestation_count), 0)

// better-sqlite3 (under @effect/sql-sqlite-node) has no types here: the calls used
interface ReadOnlyDb {
  prepare(sql: string): { all(): Array<unknown>; get(): unknown }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (file: string, options: object) => ReadOnlyDb

export const sqliteProbe = (file: string): DbProbe => {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  const pull = db.prepare(PULL_ROWS)
  const push = db.prepare(PUSH_ROWS)
  const pages = db.prepare("SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()")
  const size = (f: string) => {
    try {
      return statSync(f).size
    } catch {
      return 0
    }
  }
  return {
    sizeBytes: async () => Number((pages.get() as { bytes: number }).bytes),
    fileBytes: () => size(file) + size(`${file}-wal`),
    attestations: async () => ({ pull: sum(pull.all() as Array<PullRow>), push: sum(push.all() as Array<PushRow>) }),
    agents: async () => timesOf(pull.all() as Array<PullRow>, push.all() as Array<PushRow>),
    close: async () => db.close()
  }
}

export const postgresProbe = (url: string, schema: string): DbProbe => {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const rows = async <R>(text: string) => (await pool.query(text)).rows as Array<R>
  return {
    sizeBytes: async () =>
      Number((await rows<{ bytes: string }>(`SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '${schema}' AND c.relkind = 'r'`))[0]!.bytes),
    fileBytes: () => undefined,
    attestations: async () => ({ pull: sum(await rows<PullRow>(PULL_ROWS)), push: sum(await rows<PushRow>(PUSH_ROWS)) }),
    agents: async () => timesOf(await rows<PullRow>(PULL_ROWS), await rows<PushRow>(PUSH_ROWS)),
    close: () => pool.end()
  }
}

/**
 * The agents that missed their schedule at `nowMs`: an enrolled agent not in the state that attests
 * (pull GET_QUOTE, push accepting), or whose last verified attestation is older than
 * `quote_interval + slack` even at the latest moment its stored time allows.
 */
export const missedAt = (agents: ReadonlyArray<AgentTimes>, nowMs: number, limitMs: number): Array<AgentTimes> =>
  agents.filter((a) => !a.active || nowMs - (a.lastSuccessMs + a.resolutionMs) > limitMs)
