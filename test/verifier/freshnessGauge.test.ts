/**
 * `attest_oldest_verified_quote_seconds` is read from the database (FleetRepo), on both backends:
 * the oldest last verified quote among active pull agents, an agent never verified counting from its
 * creation; stopped agents and push agents left out; none active reads as None (0 on the gauge).
 * The gauge is read at each scrape while its layer is up, and not after.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { scrapePrometheus } from "../../src/ops/prometheus.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { FreshnessGaugeLive } from "../../src/verifier/domain/freshnessGauge.js"
import { FleetRepo } from "../../src/verifier/domain/repo/FleetRepo.js"
import { PushRepo } from "../../src/verifier/domain/pushStore/repo.js"
import { testDatabase } from "../support/db.js"
import { parseExposition, valueOf } from "../support/prometheus.js"
import { backends, validBody, verifierLayer } from "./support.js"

const setRow = (id: string, state: number, lastVerified: number, createdAt: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE verifier_agents SET operational_state = ${state}, last_successful_attestation = ${lastVerified}, created_at = ${createdAt} WHERE agent_id = ${id}`)

for (const [backend, available] of backends) describe.skipIf(!available)(`the fleet's oldest verified quote on ${backend}`, () => {
  it.live("is the oldest among active pull agents, read from the database", () =>
    Effect.gen(function*() {
      const db = yield* testDatabase(backend)
      yield* Effect.gen(function*() {
        const fleet = yield* FleetRepo
        expect(yield* fleet.oldestVerifiedQuote()).toEqual(Option.none())
        const agents = yield* Agents
        const ids = ["d432fbb3-d2f1-4a97-9ef7-75bd81c00101", "d432fbb3-d2f1-4a97-9ef7-75bd81c00102", "d432fbb3-d2f1-4a97-9ef7-75bd81c00103", "d432fbb3-d2f1-4a97-9ef7-75bd81c00104", "d432fbb3-d2f1-4a97-9ef7-75bd81c00105"]
        for (const id of ids) yield* agents.add(id, validBody())
        const now = Math.floor(Date.now() / 1000)
        yield* setRow(ids[0]!, 3, now - 10, now - 500) // verified 10 s ago
        yield* setRow(ids[1]!, 3, 0, now - 40) // never verified, added 40 s ago
        yield* setRow(ids[2]!, 10, now - 900, now - 1000) // stopped: not counted
        yield* setRow(ids[3]!, 7, now - 800, now - 1000) // FAILED: not counted
        yield* setRow(ids[4]!, 3, now - 700, now - 1000) // attests by push: not counted
        yield* (yield* PushRepo).ensurePushAgent(ids[4]!, 1)
        expect(yield* fleet.oldestVerifiedQuote()).toEqual(Option.some(now - 40))

        // the gauge: read at each scrape (no periodic read), its age at the scrape
        const ageAtScrape = Effect.map(scrapePrometheus, (text) => valueOf(parseExposition(text), "attest_oldest_verified_quote_seconds"))
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(FreshnessGaugeLive)
          const age = yield* ageAtScrape
          expect({ age: age !== undefined && age >= 40 && age < 60 }).toEqual({ age: true })
          // the agent added 40 s ago is verified now: the next scrape reads it, without waiting for a poll
          yield* setRow(ids[1]!, 3, Math.floor(Date.now() / 1000) - 5, now - 40)
          const next = yield* ageAtScrape
          expect({ age: next !== undefined && next >= 10 && next < 30 }).toEqual({ age: true })
        }))
        // the layer closed: scrapes no longer read (the value stays what was last read)
        yield* setRow(ids[0]!, 3, now - 3000, now - 5000)
        const after = yield* ageAtScrape
        expect({ age: after !== undefined && after >= 10 && after < 30 }).toEqual({ age: true })
      }).pipe(Effect.provide(Layer.merge(FleetRepo.Default, PushRepo.Default)), Effect.provide(verifierLayer(db)))
    }).pipe(Effect.scoped), 120_000)
})
