/**
 * `Effect.fn(name)` for functions on the request path, without the cost of a span nobody reads.
 * A listener serves its requests with the tracer disabled when no exporter is in place
 * (src/http/HttpServers.ts); Effect.fn still captures a stack trace at each call, makes a no-op
 * span and provides it as the parent span (two copies of the fiber's FiberRefs): for an admin
 * list, three of the nine context changes of the request. Here, with the tracer disabled the body
 * runs with none of that; with it enabled (an exporter, or Effect's own tracer outside requests)
 * it runs as `Effect.fn(name)` runs it: the same span, name and parent; only the stack trace
 * attribute of the span names this file rather than the caller.
 *
 *   const list = fnTraced("Agents.list")(function*(verifierId?: string) { ... })
 */
import { Effect, FiberRef } from "effect"
import type { YieldWrap } from "effect/Utils"

export const fnTraced = (name: string) =>
<Eff extends YieldWrap<Effect.Effect<any, any, any>>, AEff, Args extends Array<any>>(
  body: (...args: Args) => Generator<Eff, AEff, never>
) => {
  const untraced = Effect.fnUntraced(body)
  const traced = Effect.fn(name)(body)
  return ((...args: Args) =>
    Effect.withFiberRuntime((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? traced(...args) : untraced(...args)
    )) as typeof untraced
}
