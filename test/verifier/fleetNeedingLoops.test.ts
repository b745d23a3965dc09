/**
 * Which pull agents cluster mode's reconciler Ensures a loop for (FleetRepo.needingLoops), on both
 * backends: an active agent whose next poll is overdue, whoever owns it; an active agent whose loop
 * last ran on a runner the registry no longer holds alive, even before it is late (only when the
 * registry was read: an empty list of live runners is no news); a TERMINATED agent. Not: an agent
 * on schedule with a live owner, or with no owner recorded; a stopped or failed agent; a push agent.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { FleetRepo } from "../../src/verifier/domain/repo/FleetRepo.js"
import { testDatabase } from "../support/db.js"
import { backends, validBody, verifierLayer } from "./support.js"

const LIVE = "10.0.0.1:7001"
const GONE = "10.0.0.2:7001"

const setRow = (id: string, state: number, nextPollAt: number, owner: string | null) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE verifier_agents SET operational_state = ${state}, next_poll_at = ${nextPollAt}, owner_runner = ${owner} WHERE agent_id = ${id}`)

const id = (n: number) => `d432fbb3-d2f1-4a97-9ef7-75bd81c002${String(n).padStart(2, "0")}`

for (const [backend, available] of backends) describe.skipIf(!available)(`agents needing a loop on ${backend}`, () => {
  it.live("are the late ones, the ones a gone runner last ran, and the TERMINATED", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        const agents = yield* Agents
        for (let n = 1; n <= 8; n++) yield* agents.add(id(n), validBody())
        const now = Math.floor(Date.now() / 1000)
        yield* setRow(id(1), 3, now + 1, LIVE) // on schedule, live owner
        yield* setRow(id(2), 3, now - 10, LIVE) // late, live owner
        yield* setRow(id(3), 3, now + 1, GONE) // on schedule, its runner gone
        yield* setRow(id(4), 3, now + 1, null) // on schedule, no runner recorded
        yield* setRow(id(5), 8, now + 1, LIVE) // TERMINATED
        yield* setRow(id(6), 10, now - 10, GONE) // stopped
        yield* setRow(id(7), 7, now - 10, GONE) // FAILED
        yield* setRow(id(8), 3, now - 10, GONE) // attests by push
        yield* (yield* PushRepo).ensurePushAgent(id(8), 1)

        const fleet = yield* FleetRepo
        const staleBefore = now - 2
        expect(yield* fleet.needingLoops(staleBefore, [LIVE])).toEqual([id(2), id(3), id(5)])
        // the registry unread: only lateness and TERMINATED count
        expect(yield* fleet.needingLoops(staleBefore, [])).toEqual([id(2), id(5)])
        expect(yield* fleet.needingLoops(staleBefore)).toEqual([id(2), id(5)])
        // both runners alive: the gone runner's agent on schedule is left alone
        expect(yield* fleet.needingLoops(staleBefore, [LIVE, GONE])).toEqual([id(2), id(5)])
      }).pipe(Effect.provide(Layer.merge(FleetRepo.Default, PushRepo.Default)), Effect.provide(verifierLayer(db)))
    }).pipe(Effect.scoped), 120_000)
})
