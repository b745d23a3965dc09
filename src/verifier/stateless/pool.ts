/**
 * The stateless checks' worker pool (`verify_workers` threads, default one per core but one) and
 * its bounded admission: a request takes a place before its body is read, among the places being
 * judged plus `verify_queue_size` waiting; when none is free the answer is at once a 503 with
 * Retry-After, so a flood costs the event loop a refusal per request, never a slower loop. The
 * workers start with the first request (a verifier that never serves verify/* runs none) and a
 * worker that dies (out of memory on a hostile body) is replaced.
 *
 * The worker's entry is found beside this module: statelessWorker.js in dist/src (tsc) and in
 * dist/cli (the bundle's own entry of that name); from the sources (tsx, vitest) the .ts entry is
 * loaded through tsx's loader inside the thread.
 */
import { Worker } from "@effect/platform"
import { NodeWorker } from "@effect/platform-node"
import { Clock, Context, Data, Effect, Layer, Pool, Scope } from "effect"
import { createRequire } from "node:module"
import { availableParallelism } from "node:os"
import { pathToFileURL } from "node:url"
import * as WorkerThreads from "node:worker_threads"
import type { VerifyIdentityResult } from "../../../schemas/Evidence.js"
import { formatVersion, type ApiVersion } from "../../http/versions.js"
import type { SnpRoots } from "../../tee/index.js"
import type { EvidenceJudgement } from "./judgeEvidence.js"
import { CheckIdentity, EvidenceJudgementSchema, JudgeEvidence, type StatelessRequest, WorkerSettings } from "./protocol.js"
import type { StatelessOptions } from "./settings.js"

/** Every place is taken: 503 with Retry-After. */
export class StatelessBusy extends Data.TaggedError("StatelessBusy")<{ readonly capacity: number }> {
  override get message(): string {
    return `verification is busy: ${this.capacity} requests are being judged or waiting; retry later`
  }
}

/** A worker could not judge the request (it died or could not start): 503. */
export class StatelessWorkerFailed extends Data.TaggedError("StatelessWorkerFailed")<{ readonly reason: string }> {
  override get message(): string {
    return `verification is unavailable: ${this.reason}`
  }
}

export interface StatelessPoolOptions extends StatelessOptions {
  /** Worker threads; 0 = availableParallelism() - 1, at least 1. */
  readonly verify_workers: number
  readonly verify_worker_nice: number
  readonly verify_queue_size: number
  readonly verify_policy_cache_size: number
}

/** The parameters of verify/identity beside the agent's AK. */
export interface IdentityInput {
  readonly agent_uuid: string
  readonly quote: string
  readonly nonce: string
  readonly hash_alg: string
}

export interface StatelessPoolShape {
  readonly workers: number
  /** Places: being judged + waiting. */
  readonly capacity: number
  /** Takes a place until the scope closes, or fails at once with StatelessBusy. */
  readonly admit: Effect.Effect<void, StatelessBusy, Scope.Scope>
  readonly evidence: (body: Uint8Array, version: ApiVersion, wantsEar: boolean) => Effect.Effect<EvidenceJudgement, StatelessWorkerFailed>
  readonly identity: (ak: Uint8Array, req: IdentityInput) => Effect.Effect<VerifyIdentityResult, StatelessWorkerFailed>
}

export class StatelessPool extends Context.Tag("attest/verifier/StatelessPool")<StatelessPool, StatelessPoolShape>() {}

export const defaultWorkerCount = (): number => Math.max(1, availableParallelism() - 1)

/** A new worker thread running statelessWorker (the .js beside this module, or the .ts through tsx). */
export const spawnStatelessWorker = (): WorkerThreads.Worker => {
  const here = import.meta.url
  if (here.endsWith(".ts")) {
    const tsx = pathToFileURL(createRequire(here).resolve("tsx/esm/api")).href
    const entry = new URL("./statelessWorker.ts", here).href
    const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}) })`
    return new WorkerThreads.Worker(boot, { eval: true })
  }
  return new WorkerThreads.Worker(new URL("./statelessWorker.js", here))
}

/**
 * The bytes in an ArrayBuffer of their own: the body is transferred to the worker, and a slice of a
 * shared buffer (node's pool, a socket read) must not be (copied instead).
 */
const ownBuffer = (bytes: Uint8Array): Uint8Array =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes : new Uint8Array(bytes)

const rootsAsDer = (roots: SnpRoots) => [...roots].map(([product, pair]) => ({ product, ark: pair.ark.der, ask: pair.ask.der }))

/** The pool over `options`; `spawn` starts one worker thread. */
export const makeStatelessPool = (
  options: StatelessPoolOptions,
  roots: SnpRoots,
  spawn: () => WorkerThreads.Worker = spawnStatelessWorker
): Effect.Effect<StatelessPoolShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const workers = options.verify_workers > 0 ? options.verify_workers : defaultWorkerCount()
    const capacity = workers + options.verify_queue_size
    const scope = yield* Effect.scope
    const settings = new WorkerSettings({
      severity_labels: options.severity_labels,
      severity_policy: options.severity_policy,
      measured_boot_policy_name: options.measured_boot_policy_name,
      ignore_tomtou_errors: options.ignore_tomtou_errors,
      snp_vcek_dir: options.snp_vcek_dir,
      policyCacheEntries: options.verify_policy_cache_size,
      snpRoots: rootsAsDer(roots),
      nice: options.verify_worker_nice
    })
    // started by the first request that needs it, then kept for the server's life; a start that
    // failed (no thread could be spawned) is tried again by the next request
    const starting = yield* Effect.makeSemaphore(1)
    let started: Worker.SerializedWorkerPool<StatelessRequest> | undefined
    // two requests handed to each worker at a time: the next one is in its port when the current
    // one is judged (with one, the worker waits for a round trip through the event loop each time)
    const start = Worker.makePoolSerialized<StatelessRequest>({ size: workers, concurrency: 2, initialMessage: () => settings }).pipe(
      Effect.provide(NodeWorker.layer(() => spawn())),
      Scope.extend(scope),
      Effect.tap((p) => Effect.sync(() => (started = p)))
    )
    const pool = Effect.suspend(() => started !== undefined ? Effect.succeed(started) : starting.withPermits(1)(Effect.suspend(() => started !== undefined ? Effect.succeed(started) : start)))
    const run = (request: JudgeEvidence | CheckIdentity): Effect.Effect<unknown, StatelessWorkerFailed> =>
      Effect.flatMap(pool, (p) =>
        Effect.scoped(Effect.flatMap(p.backing.get, (worker) =>
          (worker.executeEffect(request) as Effect.Effect<unknown, unknown>).pipe(
            // a dead worker is replaced by the pool
            Effect.tapError(() => Pool.invalidate(p.backing, worker))
          )))
      ).pipe(Effect.mapError((e) => new StatelessWorkerFailed({ reason: e instanceof Error ? e.message : String(e) })))

    let taken = 0
    const admit = Effect.acquireRelease(
      Effect.suspend(() => {
        if (taken >= capacity) return Effect.fail(new StatelessBusy({ capacity }))
        taken++
        return Effect.void
      }),
      () => Effect.sync(() => void taken--)
    )

    const evidence = (body: Uint8Array, version: ApiVersion, wantsEar: boolean) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(
          run(new JudgeEvidence({ body: ownBuffer(body), version: formatVersion(version), wantsEar, now })) as Effect.Effect<typeof EvidenceJudgementSchema.Type, StatelessWorkerFailed>,
          (j): EvidenceJudgement =>
            j.verdict === undefined
              ? { status: j.status, body: j.body }
              : {
                status: j.status,
                body: j.body,
                // the worker's stage times are on the wall clock's origin: onto this thread's monotonic clock
                verdict: { ...j.verdict, stages: j.verdict.stages.map((s) => ({ ...s, start: s.start - performance.timeOrigin, end: s.end - performance.timeOrigin })), ear: j.verdict.ear as never }
              }
        ))

    const identity = (ak: Uint8Array, req: IdentityInput) =>
      run(new CheckIdentity({ ak, agent_uuid: req.agent_uuid, quote: req.quote, nonce: req.nonce, hash_alg: req.hash_alg })) as Effect.Effect<
        VerifyIdentityResult,
        StatelessWorkerFailed
      >

    return { workers, capacity, admit, evidence, identity }
  })

export const StatelessPoolLive = (options: StatelessPoolOptions, roots: SnpRoots) => Layer.scoped(StatelessPool, makeStatelessPool(options, roots))
