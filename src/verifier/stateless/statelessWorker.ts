/**
 * A stateless-check worker thread: judges verify/evidence and verify/identity requests with
 * judgeEvidence.ts and verifyIdentity.ts, away from the event loop that serves agents. It prepares
 * its settings from the first message (WorkerSettings), keeps its own compiled-policy cache and,
 * on Linux, may lower its own scheduling priority (`verify_worker_nice`) so the attestation loop is
 * served first when the machine is busy. Started by pool.ts; bundled as its own entry (dist/cli/statelessWorker.js).
 */
import { WorkerRunner } from "@effect/platform"
import { NodeWorkerRunner } from "@effect/platform-node"
import { Effect, Either, Layer } from "effect"
import { readlinkSync } from "node:fs"
import { setPriority } from "node:os"
import { makeSnpRoots, type ProductLine, type SnpRoots } from "../../tee/index.js"
import { parseVersion } from "../../http/versions.js"
import { verifyIdentity } from "./verifyIdentity.js"
import { judgeEvidence } from "./judgeEvidence.js"
import { makeStatelessPolicyCache, type StatelessPolicyCache } from "./policyCache.js"
import { StatelessRequest, type WorkerSettings } from "./protocol.js"
import { judgingContext, type StatelessSettings, statelessSettings } from "./settings.js"

/** This thread's niceness only (Linux: setpriority on a thread id). Best effort elsewhere. */
const lowerOwnPriority = (nice: number): void => {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop())
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice)
  } catch {
    // not Linux, or not permitted: the worker runs at the process's priority
  }
}

let prepared: { readonly settings: StatelessSettings; readonly cache: StatelessPolicyCache } | undefined

const prepare = (init: WorkerSettings) =>
  Effect.gen(function*() {
    const pems: Partial<Record<ProductLine, { ark: Uint8Array; ask: Uint8Array }>> = {}
    for (const r of init.snpRoots) pems[r.product as ProductLine] = { ark: r.ark, ask: r.ask }
    const roots: SnpRoots = yield* Either.mapLeft(makeSnpRoots(pems), (e) => e.message)
    const settings = yield* Effect.mapError(statelessSettings(init, roots), (e) => e.message)
    prepared = { settings, cache: makeStatelessPolicyCache(init.policyCacheEntries) }
    if (init.nice > 0) lowerOwnPriority(init.nice)
  })

const ready = () => {
  if (prepared === undefined) throw new Error("stateless worker used before its settings")
  return prepared
}

const clock = () => performance.timeOrigin + performance.now()

const handlers = {
  InitialMessage: prepare,
  JudgeEvidence: (req: { readonly body: Uint8Array; readonly version: string; readonly wantsEar: boolean; readonly now: number }) =>
    Effect.sync(() => {
      const { cache, settings } = ready()
      const version = parseVersion(req.version) ?? { major: 2, minor: 5 }
      return judgeEvidence(req.body, version, req.wantsEar, judgingContext(settings, cache, req.now, clock))
    }),
  CheckIdentity: (req: { readonly ak: Uint8Array; readonly agent_uuid: string; readonly quote: string; readonly nonce: string; readonly hash_alg: string }) =>
    Effect.sync(() => verifyIdentity(req.ak, req))
}

Effect.runFork(WorkerRunner.launch(WorkerRunner.layerSerialized(StatelessRequest, handlers).pipe(Layer.provide(NodeWorkerRunner.layer))))
