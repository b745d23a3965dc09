/** How `attest verifier cluster status` runs: one read of the verifier's database (no migration, no listener). */
import { Console, Effect, Layer, type Option } from "effect"
import { ConfigSources, VerifierConfig } from "../config/services.js"
import { nowSeconds } from "../db/dialect.js"
import { SqlLive } from "../db/Sql.js"
import { clusterStatusLines, clusterStatusOf } from "../verifier/domain/clusterStatus.js"
import { FleetRepo } from "../verifier/domain/repo/FleetRepo.js"

export const status = ({ config, json }: { readonly config: Option.Option<string>; readonly json: boolean }) =>
  Effect.gen(function*() {
    const section = yield* VerifierConfig.pipe(Effect.provide(VerifierConfig.layer), Effect.provide(ConfigSources.fromFile(config)))
    const read = Effect.gen(function*() {
      const fleet = yield* FleetRepo
      const [runners, owners] = yield* Effect.all([fleet.clusterRunners(), fleet.owners()])
      return clusterStatusOf(runners, owners, yield* nowSeconds)
    })
    const s = yield* read.pipe(Effect.provide(FleetRepo.Default.pipe(Layer.provide(SqlLive(section, "verifier")))))
    yield* Console.log(json ? JSON.stringify(s, null, 2) : clusterStatusLines(s).join("\n"))
  }).pipe(Effect.tapError((e) => Console.error(`attest verifier cluster status: ${"message" in e ? e.message : String(e)}`)))
