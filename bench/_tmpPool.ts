import { Effect } from "effect"
import { makeStatelessPool } from "../src/verifier/stateless/pool.js"
import { verifierOptions } from "../src/verifier/fromConfig.js"
import { amdRoots } from "../src/tee/index.js"
import { record } from "../test/verifier/support.js"
const body = new TextEncoder().encode(JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body))
const v = { major: 2, minor: 6 }
const nice = Number(process.argv[2] ?? 10)
const main = Effect.gen(function*() {
  const pool = yield* makeStatelessPool({ ...verifierOptions({}), verify_workers: 1, verify_worker_nice: nice }, amdRoots())
  for (const conc of [1, 8]) {
    yield* Effect.forEach(Array.from({ length: 500 }), () => pool.evidence(body.slice(), v, false), { concurrency: conc })
    const cpu0 = process.cpuUsage(); const t = performance.now()
    const N = 2000
    yield* Effect.forEach(Array.from({ length: N }), () => pool.evidence(body.slice(), v, false), { concurrency: conc })
    const c = process.cpuUsage(cpu0)
    console.log(`nice ${nice} conc ${conc}: wall ms/req`, ((performance.now() - t) / N).toFixed(3), "cpu ms/req", ((c.user + c.system) / 1000 / N).toFixed(3))
  }
})
Effect.runPromise(Effect.scoped(main)).then(() => process.exit(0))
