/**
 * `verifier_agents`: the admin operations (insert, read, list, delete, admin state changes that bump
 * `generation`) and the loop's writes, each conditional on the generation the loop read and on the
 * owner epoch it took when it started (its fencing token, migration 0025): a write that loses to an
 * admin change or to a newer loop (another process) reports `false` and changes nothing. `severity_level` and
 * `last_event_id` only ever increase. Same SQL on SQLite and PostgreSQL.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Either, Option, Schema } from "effect"
import { fnTraced } from "../../../ops/fnTraced.js"
import { nowSeconds } from "../../../db/dialect.js"
import { storeError } from "../errors.js"
import { ACTIVE_STATES, OperationalState } from "../../../attestation/states.js"
import { AGENT_COLUMNS, AgentRow, AgentView } from "./rows.js"
import { agentsWithPolicyFacts } from "./policyFacts.js"
import { nextSeq } from "./seq.js"

/** What a loop's write is conditional on: the generation it read and the owner epoch it took. */
export interface LoopFence {
  readonly generation: number
  readonly ownerEpoch: number
}

/** Who owns the agent's loop now, and its state (what a loop whose write lost reads). */
export interface Ownership {
  readonly operationalState: number
  readonly ownerEpoch: number
}

/** What agent creation stores; the loop's columns start at their initial values. */
export interface NewAgent {
  readonly agent_id: string
  readonly verifier_id: string
  readonly operational_state: number
  readonly v: string | null
  readonly ip: string
  readonly port: number
  readonly tpm_policy: string
  readonly vtpm_policy: string | null
  readonly meta_data: string
  readonly ak_tpm: string
  readonly mtls_cert: string | null
  readonly runtime_policy_name: string
  readonly mb_policy_name: string
  readonly ima_sign_verification_keys: string
  readonly revocation_key: string
  readonly accept_tpm_hash_algs: ReadonlyArray<string>
  readonly accept_tpm_encryption_algs: ReadonlyArray<string>
  readonly accept_tpm_signing_algs: ReadonlyArray<string>
  readonly supported_version: string | null
}

/** An admin change: a new state, optionally with the loop's progress reset (reactivate). */
export interface AdminChange {
  readonly operationalState: number
  /** retry_count 0, V to be delivered again, evaluation_state and next_poll_at cleared. */
  readonly resetProgress?: boolean
}

/** A failure event to record: kept only if its severity is above the stored one. */
export interface EventWrite {
  readonly eventId: string
  readonly severityLevel: number
  /** What the failure said (e.g. the IMA path and entry); kept with the event id. */
  readonly message?: string | undefined
}

/** The loop's write after a quote was judged. */
export interface VerdictWrite {
  readonly operationalState: number
  /** Counted in attestation_count and last_successful_attestation. */
  readonly valid: boolean
  /** When the quote was received (epoch seconds): last_received_quote. */
  readonly receivedAt: number
  readonly event?: EventWrite | undefined
  /** The evaluator's next state as JSON (IMA progress, NK pubkey, TPM clock). */
  readonly evaluationState: string | null
  readonly algorithms?: { readonly hashAlg: string; readonly encAlg: string; readonly signAlg: string } | undefined
  readonly vDelivered?: boolean | undefined
  readonly nextPollAt: number | null
  /**
   * The checksums of the two policies the verdict was judged against: the write loses (like a
   * changed generation) when either policy was replaced meanwhile, so a verdict never outlives
   * its policy and the loop needs no read before each quote.
   */
  readonly policyChecksums?: { readonly runtime: string; readonly mb: string } | undefined
  /** The verdict's facts for its EAR (src/ear/verdictFacts.ts), JSON: last_verdict. */
  readonly lastVerdict?: string | undefined
}

export interface RetryWrite {
  readonly operationalState: number
  readonly retryCount: number
  readonly nextPollAt: number
}

export interface FailedWrite {
  /** FAILED (7) unless said otherwise. */
  readonly operationalState?: number | undefined
  readonly event: EventWrite
}

export interface StateWrite {
  readonly operationalState: number
  readonly vDelivered?: boolean | undefined
  readonly retryCount?: number | undefined
  readonly nextPollAt?: number | null | undefined
}

const decodeRow = Schema.decodeUnknown(AgentRow)
// synchronous: a view is read on every push request, an effect per row costs more than the decode
const decodeView = Schema.decodeUnknownEither(AgentView)

export class AgentRepo extends Effect.Service<AgentRepo>()("attest/verifier/AgentRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(AGENT_COLUMNS.join(", "))
    const viewColumns = sql.literal(
      [
        ...AGENT_COLUMNS.map((c) => `a.${c}`),
        "r.checksum AS runtime_policy_checksum",
        "r.has_policy AS runtime_policy_has_policy",
        "r.digest_count AS runtime_policy_digest_count",
        "m.checksum AS mb_policy_checksum",
        "m.has_policy AS mb_policy_has_policy",
        "m.key_count AS mb_policy_key_count"
      ].join(", ")
    )
    // views read only their policies' facts (see policiesUnchanged)
    const factsFrom = agentsWithPolicyFacts(sql)
    const active = [...ACTIVE_STATES]
    // the checksums the verdict was judged against. SQLite would pick the primary key for
    // `name = ?` and then walk the overflow pages of the policy's text (megabytes) to reach the
    // checksum; the covering indexes of migration 0018 answer without the row. PostgreSQL keeps
    // large text out of line (TOAST).
    const policiesUnchanged = (c: { readonly runtime: string; readonly mb: string }) =>
      sql.onDialectOrElse({
        sqlite: () =>
          sql`(SELECT checksum FROM verifier_runtime_policies INDEXED BY verifier_runtime_policy_facts WHERE name = verifier_agents.runtime_policy_name) = ${c.runtime}
            AND (SELECT checksum FROM verifier_mb_policies INDEXED BY verifier_mb_policy_facts WHERE name = verifier_agents.mb_policy_name) = ${c.mb}`,
        orElse: () =>
          sql`(SELECT checksum FROM verifier_runtime_policies WHERE name = verifier_agents.runtime_policy_name) = ${c.runtime}
            AND (SELECT checksum FROM verifier_mb_policies WHERE name = verifier_agents.mb_policy_name) = ${c.mb}`
      })

    const views = (operation: string, where: Statement.Fragment) =>
      // the view reads only the policies' facts: the covering indexes answer it (a push attestation reads it three times)
      sql`SELECT ${viewColumns} FROM ${factsFrom} WHERE ${where} ORDER BY a.seq, a.agent_id`.pipe(
        Effect.flatMap((rows) => Effect.forEach(rows, (r) => Either.match(decodeView(r), { onLeft: Effect.fail, onRight: Effect.succeed }))),
        Effect.mapError(storeError(operation))
      )

    /** True when inserted; false when the id exists (a concurrent add won). */
    const insert = fnTraced("AgentRepo.insert")(function*(agent: NewAgent) {
      const now = yield* nowSeconds
      const seq = yield* nextSeq(sql, "verifier_agents")
      const rows = yield* sql`INSERT INTO verifier_agents ${
        sql.insert({
          ...agent,
          seq,
          accept_tpm_hash_algs: JSON.stringify(agent.accept_tpm_hash_algs),
          accept_tpm_encryption_algs: JSON.stringify(agent.accept_tpm_encryption_algs),
          accept_tpm_signing_algs: JSON.stringify(agent.accept_tpm_signing_algs),
          hash_alg: "",
          enc_alg: "",
          sign_alg: "",
          severity_level: null,
          last_event_id: null,
          last_event_message: null,
          attestation_count: 0,
          last_received_quote: 0,
          last_successful_attestation: 0,
          evaluation_state: null,
          v_delivered: 0,
          retry_count: 0,
          next_poll_at: null,
          generation: 0,
          created_at: now,
          updated_at: now
        })
      } ON CONFLICT (agent_id) DO NOTHING RETURNING agent_id`.pipe(Effect.mapError(storeError("insert agent")))
      return rows.length > 0
    })

    const find = fnTraced("AgentRepo.find")(function*(agentId: string) {
      const rows = yield* sql`SELECT ${columns} FROM verifier_agents WHERE agent_id = ${agentId}`.pipe(
        Effect.mapError(storeError("find agent"))
      )
      if (rows.length === 0) return Option.none<AgentRow>()
      return Option.some(yield* decodeRow(rows[0]).pipe(Effect.mapError(storeError("find agent"))))
    })

    /** One agent with its policy facts (names, checksums, has_policy): what show and the loop read. */
    const findView = fnTraced("AgentRepo.findView")(function*(agentId: string) {
      const rows = yield* views("find agent", sql`a.agent_id = ${agentId}`)
      return Option.fromNullable(rows[0])
    })

    /** Ids in creation order, of one verifier or all. */
    const listIds = fnTraced("AgentRepo.listIds")(function*(verifierId?: string) {
      const rows = yield* (verifierId === undefined
        ? sql<{ agent_id: string }>`SELECT agent_id FROM verifier_agents ORDER BY seq, agent_id`
        : sql<{ agent_id: string }>`SELECT agent_id FROM verifier_agents WHERE verifier_id = ${verifierId} ORDER BY seq, agent_id`)
        .pipe(Effect.mapError(storeError("list agents")))
      return rows.map((r) => String(r.agent_id))
    })

    /** Every agent's view (bulk status), of one verifier or all. */
    const listViews = fnTraced("AgentRepo.listViews")(function*(verifierId?: string) {
      return yield* views("list agents", verifierId === undefined ? sql`1 = 1` : sql`a.verifier_id = ${verifierId}`)
    })

    /** Agents this verifier polls after a restart: its own pull agents, in START, GET_QUOTE, PROVIDE_V or their retries. */
    const activeOf = fnTraced("AgentRepo.activeOf")(function*(verifierId: string) {
      // push agents (a push_agents row: they have attested by push) are never polled
      return yield* views(
        "list active agents",
        sql`a.verifier_id = ${verifierId} AND ${sql.in("a.operational_state", active)}
          AND NOT EXISTS (SELECT 1 FROM push_agents p WHERE p.agent_id = a.agent_id)`
      )
    })

    /** TERMINATED agents of this verifier: their deletion was accepted (202) and is still to be done. */
    const terminatedOf = fnTraced("AgentRepo.terminatedOf")(function*(verifierId: string) {
      const rows = yield* sql<{ agent_id: string }>`SELECT agent_id FROM verifier_agents
        WHERE verifier_id = ${verifierId} AND operational_state = ${OperationalState.TERMINATED} ORDER BY seq`.pipe(
        Effect.mapError(storeError("list terminated agents"))
      )
      return rows.map((r) => String(r.agent_id))
    })

    const remove = fnTraced("AgentRepo.remove")(function*(agentId: string) {
      const rows = yield* sql`DELETE FROM verifier_agents WHERE agent_id = ${agentId} RETURNING agent_id`.pipe(
        Effect.mapError(storeError("delete agent"))
      )
      return rows.length > 0
    })

    /** Admin change (stop, reactivate, terminate): bumps `generation`; the new one, or None for an unknown id. */
    const adminUpdate = fnTraced("AgentRepo.adminUpdate")(function*(agentId: string, change: AdminChange) {
      const now = yield* nowSeconds
      const sets = [
        sql`operational_state = ${change.operationalState}`,
        sql`generation = generation + 1`,
        sql`updated_at = ${now}`,
        ...(change.resetProgress === true
          ? [sql`retry_count = 0`, sql`v_delivered = 0`, sql`evaluation_state = NULL`, sql`next_poll_at = NULL`]
          : [])
      ]
      const rows = yield* sql<{ generation: unknown }>`UPDATE verifier_agents SET ${sql.csv(sets)}
        WHERE agent_id = ${agentId} RETURNING generation`.pipe(Effect.mapError(storeError("update agent")))
      return rows.length === 0 ? Option.none<number>() : Option.some(Number(rows[0]!.generation))
    })

    // --- the loop's writes: each only if nobody changed the agent since the loop read `generation` ---

    const eventSets = (event: EventWrite | undefined): Array<Statement.Fragment> =>
      event === undefined ? [] : [
        // both compare with the stored severity (SET reads the old row): the event id follows its severity
        sql`last_event_id = CASE WHEN severity_level IS NULL OR severity_level < ${event.severityLevel}
          THEN ${event.eventId} ELSE last_event_id END`,
        sql`last_event_message = CASE WHEN severity_level IS NULL OR severity_level < ${event.severityLevel}
          THEN ${event.message ?? null} ELSE last_event_message END`,
        sql`severity_level = CASE WHEN severity_level IS NULL OR severity_level < ${event.severityLevel}
          THEN ${event.severityLevel} ELSE severity_level END`
      ]

    const conditional = (
      operation: string,
      agentId: string,
      fence: LoopFence,
      sets: ReadonlyArray<Statement.Fragment>,
      also: Statement.Fragment = sql`1 = 1`
    ) =>
      Effect.flatMap(nowSeconds, (now) =>
        sql`UPDATE verifier_agents SET ${sql.csv([...sets, sql`updated_at = ${now}`])}
          WHERE agent_id = ${agentId} AND generation = ${fence.generation} AND owner_epoch = ${fence.ownerEpoch} AND ${also} RETURNING agent_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.mapError(storeError(operation))
        ))

    /** After a judged quote: state, counters, timestamps, event (only increasing), evaluator state. */
    // a plain function (no Effect.fn): it runs once per quote of every agent, and sql.execute is its span
    const recordVerdict = (agentId: string, fence: LoopFence, w: VerdictWrite) => {
      const sets: Array<Statement.Fragment> = [
        sql`operational_state = ${w.operationalState}`,
        sql`attestation_count = attestation_count + ${w.valid ? 1 : 0}`,
        sql`last_received_quote = ${w.receivedAt}`,
        ...(w.valid ? [sql`last_successful_attestation = ${w.receivedAt}`] : []),
        ...eventSets(w.event),
        sql`evaluation_state = ${w.evaluationState}`,
        ...(w.algorithms === undefined ? [] : [
          sql`hash_alg = ${w.algorithms.hashAlg}`,
          sql`enc_alg = ${w.algorithms.encAlg}`,
          sql`sign_alg = ${w.algorithms.signAlg}`
        ]),
        ...(w.vDelivered === undefined ? [] : [sql`v_delivered = ${w.vDelivered ? 1 : 0}`]),
        sql`retry_count = 0`,
        sql`next_poll_at = ${w.nextPollAt}`,
        ...(w.lastVerdict === undefined ? [] : [sql`last_verdict = ${w.lastVerdict}`])
      ]
      return conditional("record verdict", agentId, fence, sets, w.policyChecksums === undefined ? undefined : policiesUnchanged(w.policyChecksums))
    }

    /** The facts of the agent's last pull verdict (JSON), none when the agent does not exist; null before its first verdict. */
    const lastVerdict = fnTraced("AgentRepo.lastVerdict")(function*(agentId: string) {
      const rows = yield* sql<{ last_verdict: unknown }>`SELECT last_verdict FROM verifier_agents WHERE agent_id = ${agentId}`.pipe(
        Effect.mapError(storeError("read last verdict"))
      )
      const r = rows[0]
      if (r === undefined) return Option.none<string | null>()
      return Option.some(typeof r.last_verdict === "string" ? r.last_verdict : null)
    })

    /** An unreachable agent: the retry number and when the next attempt is due. */
    const recordRetry = fnTraced("AgentRepo.recordRetry")(function*(agentId: string, fence: LoopFence, w: RetryWrite) {
      return yield* conditional("record retry", agentId, fence, [
        sql`operational_state = ${w.operationalState}`,
        sql`retry_count = ${w.retryCount}`,
        sql`next_poll_at = ${w.nextPollAt}`
      ])
    })

    /** The loop gives up (not reachable, no quote, no V, exception): FAILED with its event. */
    const markFailed = fnTraced("AgentRepo.markFailed")(function*(agentId: string, fence: LoopFence, w: FailedWrite) {
      return yield* conditional("mark failed", agentId, fence, [
        sql`operational_state = ${w.operationalState ?? OperationalState.FAILED}`,
        ...eventSets(w.event),
        sql`next_poll_at = ${null}`
      ])
    })

    /** A state change of the loop (START → GET_QUOTE, PROVIDE_V → GET_QUOTE after V, …). */
    const setState = fnTraced("AgentRepo.setState")(function*(agentId: string, fence: LoopFence, w: StateWrite) {
      return yield* conditional("set state", agentId, fence, [
        sql`operational_state = ${w.operationalState}`,
        ...(w.vDelivered === undefined ? [] : [sql`v_delivered = ${w.vDelivered ? 1 : 0}`]),
        ...(w.retryCount === undefined ? [] : [sql`retry_count = ${w.retryCount}`]),
        ...(w.nextPollAt === undefined ? [] : [sql`next_poll_at = ${w.nextPollAt}`])
      ])
    })

    // --- ownership of the loop (the fencing token) ---

    /**
     * A loop of `verifierId` starts: the next owner epoch, which fences out every older loop, and the
     * runner it runs on (cluster mode; null otherwise); None when the agent is not this verifier's.
     */
    const takeOwnership = fnTraced("AgentRepo.takeOwnership")(function*(agentId: string, verifierId: string, runner: string | null = null) {
      const rows = yield* sql<{ owner_epoch: unknown }>`UPDATE verifier_agents SET owner_epoch = owner_epoch + 1, owner_runner = ${runner}
        WHERE agent_id = ${agentId} AND verifier_id = ${verifierId} RETURNING owner_epoch`.pipe(Effect.mapError(storeError("take agent ownership")))
      return rows.length === 0 ? Option.none<number>() : Option.some(Number(rows[0]!.owner_epoch))
    })

    /** The agent's state and owner epoch; None for an unknown id. */
    const ownership = fnTraced("AgentRepo.ownership")(function*(agentId: string) {
      const rows = yield* sql<{ operational_state: unknown; owner_epoch: unknown }>`SELECT operational_state, owner_epoch
        FROM verifier_agents WHERE agent_id = ${agentId}`.pipe(Effect.mapError(storeError("read agent ownership")))
      const r = rows[0]
      return r === undefined
        ? Option.none<Ownership>()
        : Option.some<Ownership>({ operationalState: Number(r.operational_state), ownerEpoch: Number(r.owner_epoch) })
    })

    /**
     * Active pull agents of `verifierId` nobody polls: their next poll (or, before the first one,
     * their last change) is older than `staleBefore` (epoch seconds), as when their process died.
     */
    const orphansOf = fnTraced("AgentRepo.orphansOf")(function*(verifierId: string, staleBefore: number) {
      const rows = yield* sql<{ agent_id: string }>`SELECT a.agent_id FROM verifier_agents a
        WHERE a.verifier_id = ${verifierId} AND ${sql.in("a.operational_state", active)}
          AND COALESCE(a.next_poll_at, a.updated_at) < ${staleBefore}
          AND NOT EXISTS (SELECT 1 FROM push_agents p WHERE p.agent_id = a.agent_id)
        ORDER BY a.seq, a.agent_id`.pipe(Effect.mapError(storeError("list orphaned agents")))
      return rows.map((r) => String(r.agent_id))
    })

    return {
      takeOwnership,
      ownership,
      orphansOf,
      insert,
      find,
      findView,
      listIds,
      listViews,
      activeOf,
      terminatedOf,
      remove,
      adminUpdate,
      recordVerdict,
      lastVerdict,
      recordRetry,
      markFailed,
      setState
    } as const
  })
}) {}
