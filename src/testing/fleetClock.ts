/**
 * The fleet's time and turns. Every fiber of the fleet runs on one FIFO scheduler (FleetScheduler)
 * and reads one test clock (FleetClock, a TestClock). The clock moves only when the fiber that
 * moves it is the only one with work queued: every other fiber then waits on a sleep, a queue or a
 * lock, so a quote being judged is finished before time moves, and which fiber runs next depends
 * only on the program, never on timers or on how busy the machine is. Sleepers at one instant wake
 * in the order they went to sleep, one at a time, each running until everything waits again.
 *
 * (Effect's TestClock waits for quiescence with wall-clock timers, several milliseconds per sleep:
 * an hour of a 50-agent fleet holds thousands of sleeps.)
 */
import { Chunk, Clock, Duration, Effect, type Fiber, FiberRef, type Scheduler, type TestClock } from "effect"

/** The fleet's clock starts here: 2030-01-01T00:00:00Z (the simulated EK certificates are valid from 2020). */
export const FLEET_EPOCH_MS = Date.UTC(2030, 0, 1)

/** A FIFO of the fleet's tasks, drained in turns of at most 50 ms of wall time (the process's own I/O goes on between). */
export class FleetScheduler implements Scheduler.Scheduler {
  private tasks: Array<Scheduler.Task> = []
  private head = 0
  private scheduled = false

  /** Tasks queued and not yet run. */
  get pending(): number {
    return this.tasks.length - this.head
  }

  scheduleTask(task: Scheduler.Task): void {
    this.tasks.push(task)
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(this.drain)
    }
  }

  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return fiber.currentOpCount > 2048 ? fiber.getFiberRef(FiberRef.currentSchedulingPriority) : false
  }

  private readonly drain = () => {
    const until = performance.now() + 50
    while (this.head < this.tasks.length) {
      const task = this.tasks[this.head++]!
      task()
      if (this.head > 4096) {
        this.tasks = this.tasks.slice(this.head)
        this.head = 0
      }
      if (performance.now() > until) break
    }
    if (this.head < this.tasks.length) setImmediate(this.drain)
    else this.scheduled = false
  }
}

interface Sleeper {
  readonly at: number
  readonly seq: number
  readonly wake: () => void
}

/** A TestClock whose adjust wakes each sleeper and then waits until the fleet's scheduler has nothing but the caller left to run. */
export class FleetClock implements TestClock.TestClock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  private now: number
  private seq = 0
  /** Sorted by (at, seq). */
  private readonly sleepers: Array<Sleeper> = []

  constructor(start: number, private readonly scheduler: FleetScheduler) {
    this.now = start
  }

  unsafeCurrentTimeMillis(): number {
    return this.now
  }
  unsafeCurrentTimeNanos(): bigint {
    return BigInt(this.now) * 1_000_000n
  }
  readonly currentTimeMillis = Effect.sync(() => this.now)
  readonly currentTimeNanos = Effect.sync(() => BigInt(this.now) * 1_000_000n)

  sleep(duration: Duration.DurationInput): Effect.Effect<void> {
    return Effect.suspend(() => {
      const ms = Duration.toMillis(duration)
      if (!(ms > 0)) return Effect.void
      if (!Number.isFinite(ms)) return Effect.never
      return Effect.async<void>((resume) => {
        const sleeper: Sleeper = { at: this.now + ms, seq: this.seq++, wake: () => resume(Effect.void) }
        // after every sleeper due at or before it: FIFO within an instant
        let i = this.sleepers.length
        while (i > 0 && this.sleepers[i - 1]!.at > sleeper.at) i--
        this.sleepers.splice(i, 0, sleeper)
        return Effect.sync(() => {
          const at = this.sleepers.indexOf(sleeper)
          if (at !== -1) this.sleepers.splice(at, 1)
        })
      })
    })
  }

  /** Until the caller is the only fiber of the fleet with work queued. */
  readonly settle: Effect.Effect<void> = Effect.gen(this, function*() {
    do yield* Effect.yieldNow()
    while (this.scheduler.pending > 0)
  })

  private runTo(end: number): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      for (;;) {
        yield* this.settle
        const next = this.sleepers[0]
        if (next === undefined || next.at > end) break
        this.sleepers.shift()
        this.now = Math.max(this.now, next.at)
        next.wake()
      }
      this.now = Math.max(this.now, end)
      yield* this.settle
    })
  }

  adjust(duration: Duration.DurationInput): Effect.Effect<void> {
    return Effect.suspend(() => this.runTo(this.now + Duration.toMillis(duration)))
  }
  adjustWith(duration: Duration.DurationInput) {
    return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => Effect.zipLeft(effect, this.adjust(duration), { concurrent: true })
  }
  setTime(time: number): Effect.Effect<void> {
    return Effect.suspend(() => this.runTo(time))
  }
  get save(): Effect.Effect<Effect.Effect<void>> {
    return Effect.sync(() => {
      const saved = this.now
      return Effect.sync(() => void (this.now = saved))
    })
  }
  get sleeps() {
    return Effect.sync(() => Chunk.fromIterable(this.sleepers.map((s) => s.at)))
  }
}

/**
 * Runs `program` on the fleet's scheduler and a fresh FleetClock at FLEET_EPOCH_MS: inside,
 * `TestClock.adjust` moves the fleet's time.
 */
export const onFleetClock = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const scheduler = new FleetScheduler()
    return program.pipe(Effect.withClock(new FleetClock(FLEET_EPOCH_MS, scheduler)), Effect.withScheduler(scheduler))
  })
