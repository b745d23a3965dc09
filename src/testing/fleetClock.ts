/**
 * The fleet's time: a TestClock of its own, starting at a fixed instant, that advances only when
 * every fiber of the fleet is suspended. TestClock.adjust waits for the fibers its annotations
 * list; this module lists every fiber the fleet forks (a Supervisor) there, so a quote being judged
 * when the clock would move is finished first, and the same history gives the same verdicts, in
 * the same order, on every run and on any machine however busy.
 */
import { Chunk, Effect, Either, Layer, MutableRef, Ref, SortedSet, Supervisor, TestAnnotation, TestAnnotationMap, TestAnnotations, TestClock, TestContext, TestServices } from "effect"
import * as Fiber from "effect/Fiber"

/** The fleet's clock starts here: 2030-01-01T00:00:00Z (the simulated EK certificates are valid from 2020). */
export const FLEET_EPOCH_MS = Date.UTC(2030, 0, 1)

/**
 * Runs `program` on a fresh TestClock at FLEET_EPOCH_MS whose adjust waits for all of the program's
 * fibers. Inside, `TestClock.adjust` moves the fleet's time.
 */
export const onFleetClock = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, TestClock.TestClock>> =>
  Effect.gen(function*() {
    const fibers = MutableRef.make(SortedSet.empty<Fiber.RuntimeFiber<unknown, unknown>>(Fiber.Order))
    const annotations = TestAnnotations.make(yield* Ref.make(TestAnnotationMap.empty()))
    yield* annotations.annotate(TestAnnotation.fibers, Either.right(Chunk.of(fibers)))
    const supervisor = yield* Supervisor.fibersIn(fibers)
    const clock = TestClock.live(TestClock.makeData(FLEET_EPOCH_MS, Chunk.empty())).pipe(
      Layer.provide(Layer.merge(TestServices.liveLayer(), Layer.succeed(TestAnnotations.TestAnnotations, annotations))),
      Layer.provide(TestContext.LiveContext)
    )
    return yield* program.pipe(Effect.supervised(supervisor), Effect.provide(clock))
  }) as Effect.Effect<A, E, Exclude<R, TestClock.TestClock>>
