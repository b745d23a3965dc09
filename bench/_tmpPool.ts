import { Effect } from "effect"
import { makeStatelessPool } from "../src/verifier/stateless/pool.js"
import { judgeEvidence } from "../src/verifier/stateless/judgeEvidence.js"
import { verifierOptions } from "../src/verifier/fromConfig.js"
import { amdRoots } from "../src/tee/index.js"
import { record } from "../test/verifier/support.js"
import { acceptAllPolicy } from "../src/boot/policy.js"
import { defaultSeverityPolicy } from "../src/verifier/index.js"
const body = new TextEncoder().encode(JSON.stringify(record("ver-evidence-ok-runtime-policy").request.body))
const v = { major: 2, minor: 6 }
const main = Effect.gen(function*() {
  const pool = yield* makeStatelessPool({ ...verifierOptions({}), verify_workers: 1 }, amdRoots())
  for (let i = 0; i < 500; i++) yield* pool.evidence(body.slice(), v, false)
  const cpu0 = process.cpuUsage(); let t = performance.now()
  const N = 2000
  for (let i = 0; i < N; i++) yield* pool.evidence(body.slice(), v, false)
  const c = process.cpuUsage(cpu0)
  console.log("pool sequential ms/req", ((performance.now() - t) / N).toFixed(3), "cpu ms/req", ((c.user + c.system) / 1000 / N).toFixed(3))
  const ctx = { severity: defaultSeverityPolicy, measuredBootPolicy: acceptAllPolicy, reportTomtou: false }
  for (let i = 0; i < 500; i++) judgeEvidence(body, v, false, ctx)
  t = performance.now()
  for (let i = 0; i < N; i++) judgeEvidence(body, v, false, ctx)
  console.log("direct ms/req", ((performance.now() - t) / N).toFixed(3))
})
Effect.runPromise(Effect.scoped(main)).then(() => process.exit(0))
