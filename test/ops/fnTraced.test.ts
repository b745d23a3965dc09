/**
 * fnTraced: Effect.fn(name)'s span when the fiber's tracer is on, none at all when it is off (the
 * request fibers of a listener without an exporter); the body's result and failure either way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { fnTraced } from "../../src/ops/fnTraced.js"

const spanName = Effect.map(Effect.option(Effect.currentSpan), Option.map((s) => s.name))

const probe = fnTraced("Probe.run")(function*(n: number) {
  const span = yield* spanName
  if (n < 0) return yield* Effect.fail(`negative: ${n}`)
  return { n: n * 2, span }
})

describe("fnTraced", () => {
  it.effect("runs its body in a span of its name when the tracer is on", () =>
    Effect.gen(function*() {
      expect(yield* probe(21)).toEqual({ n: 42, span: Option.some("Probe.run") })
      expect(yield* Effect.either(probe(-1))).toEqual(Either.left("negative: -1"))
    }))

  it.effect("makes no span when the tracer is off, with the same result and failure", () =>
    Effect.gen(function*() {
      // an enclosing span, so that a span made by the body's own call would show as a different name
      const inner = yield* probe(21).pipe(Effect.withSpan("outer"), Effect.withTracerEnabled(false))
      expect(inner).toEqual({ n: 42, span: Option.some("outer") })
      expect(yield* Effect.either(probe(-1).pipe(Effect.withTracerEnabled(false)))).toEqual(Either.left("negative: -1"))
    }))
})
