import { Effect } from "effect"
import { simpleProvider } from "../src/http/authorization.js"
const req = { action: "submit_attestation", operationClass: "agentOnly" as const, identity: { _tag: "Agent" as const, agentId: "a" }, resourceAgentId: "a" }
const N = 20000
const time = (label: string, e: () => Effect.Effect<unknown, unknown>) => Effect.gen(function*() {
  for (let i = 0; i < 3000; i++) yield* e()
  const u0 = process.cpuUsage()
  for (let i = 0; i < N; i++) yield* e()
  const u = process.cpuUsage(u0)
  console.log(label, ((u.user + u.system) / N).toFixed(2), "us")
})
Effect.runPromise(Effect.gen(function*() {
  yield* time("authorize (Effect.fn)", () => simpleProvider.authorize(req as never))
  yield* time("authorize, tracer off", () => Effect.withTracerEnabled(simpleProvider.authorize(req as never), false))
  yield* time("Effect.void", () => Effect.void)
}))
