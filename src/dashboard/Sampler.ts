/**
 * The dashboard's one background loop: every `intervalMs` (or longer, so that reading a large
 * fleet's bulk status takes at most a fifth of the verifier's time) it reads the verifier (bulk agent status,
 * runtime and measured-boot policy names) and, every `registrarEvery` samples, the registrar (ids,
 * then the record of each id not yet known as active), keeps the latest snapshot and the history,
 * and tells the live-update listeners. A service that cannot be reached is marked with the reason
 * and its last data is kept; the loop never stops on an upstream error.
 */
import { Clock, Context, Effect, Either, Layer } from "effect"
import type { ClientTls } from "../http/client.js"
import { agentsOfBulk } from "./agents.js"
import { emptyHistory, type History, recordSample } from "./history.js"
import { inactiveEntry, type RegistrarEntry, registrarEntryOf } from "./registrarRecords.js"
import { makeUpstream, type Upstream, UpstreamError } from "./upstream.js"
import type { ServiceStatus, Snapshot } from "./views.js"

export interface SamplerOptions {
  readonly verifierUrl: string
  readonly registrarUrl: string
  readonly tls: ClientTls
  /** Milliseconds between verifier samples (default 2000). */
  readonly intervalMs?: number
  /** Registrar read every this many samples (default 3). */
  readonly registrarEvery?: number
}

export interface SamplerShape {
  readonly snapshot: () => Snapshot
  readonly history: History
  /** Called after every sample with the new version; answers an unsubscribe. */
  readonly subscribe: (listener: (version: number) => void) => () => void
  /** Samples now (tests; the loop keeps its pace). */
  readonly sampleNow: Effect.Effect<void>
}

export class Sampler extends Context.Tag("attest/dashboard/Sampler")<Sampler, SamplerShape>() {}

/** Version the API is spoken in: the server's `current_version`, 2.5 when it does not say. */
const apiVersionOf = (u: Upstream) =>
  u.get("/version").pipe(
    Effect.map((r) => {
      const v = (r as { current_version?: unknown } | null)?.current_version
      return typeof v === "string" && /^\d+\.\d+$/.test(v) ? v : "2.5"
    })
  )

const okStatus = (url: string): ServiceStatus => ({ url, ok: true, error: null, failingSince: null })
const failedStatus = (prev: ServiceStatus, e: UpstreamError, now: number): ServiceStatus => ({
  url: prev.url,
  ok: false,
  error: e.message,
  failingSince: prev.failingSince ?? now
})

const namesOf = (results: unknown, key: string): ReadonlyArray<string> | null => {
  const list = (results as Record<string, unknown> | null)?.[key]
  return Array.isArray(list) ? list.filter((x): x is string => typeof x === "string") : null
}

const NOT_ACTIVATED = /has not been activated/

/** The pause after a sample is at least this many times the last verifier read: at most a fifth of the time reading. */
const READ_SHARE_SPACING = 4

export const makeSampler = (o: SamplerOptions) =>
  Effect.gen(function*() {
    const verifier = makeUpstream("verifier", o.verifierUrl, o.tls)
    const registrar = makeUpstream("registrar", o.registrarUrl, o.tls)
    yield* Effect.addFinalizer(() => Effect.sync(() => (verifier.close(), registrar.close())))
    const history = emptyHistory()
    const listeners = new Set<(version: number) => void>()
    let versions: { verifier?: string | undefined; registrar?: string | undefined } = {}
    let round = 0
    let snapshot: Snapshot = {
      version: 0,
      takenAt: null,
      verifier: { url: o.verifierUrl, ok: false, error: "not read yet", failingSince: null },
      registrar: { url: o.registrarUrl, ok: false, error: "not read yet", failingSince: null },
      agents: new Map(),
      runtimePolicies: null,
      mbPolicies: null,
      registrarAgents: null
    }

    const readVerifier = Effect.gen(function*() {
      const v = versions.verifier ?? (yield* apiVersionOf(verifier))
      versions = { ...versions, verifier: v }
      const bulk = yield* verifier.get(`/v${v}/agents/?bulk=true`)
      // policy lists are secondary: a failure blanks them, not the agents
      const runtime = yield* Effect.either(verifier.get(`/v${v}/allowlists/`))
      const mb = yield* Effect.either(verifier.get(`/v${v}/mbpolicies/`))
      return {
        agents: agentsOfBulk(bulk),
        runtimePolicies: Either.isRight(runtime) ? namesOf(runtime.right, "runtimepolicy names") : null,
        mbPolicies: Either.isRight(mb) ? namesOf(mb.right, "mbpolicy names") : null
      }
    })

    const readRegistrar = (known: ReadonlyMap<string, RegistrarEntry> | null) =>
      Effect.gen(function*() {
        const v = versions.registrar ?? (yield* apiVersionOf(registrar))
        versions = { ...versions, registrar: v }
        const list = yield* registrar.get(`/v${v}/agents/`)
        const ids = namesOf(list, "uuids") ?? []
        const entries = yield* Effect.forEach(ids, (id) => {
          const prev = known?.get(id)
          // an active record is read once; one not active yet is asked again each round
          if (prev !== undefined && prev.active) return Effect.succeed(prev)
          return registrar.get(`/v${v}/agents/${encodeURIComponent(id)}`).pipe(
            Effect.map((r) => registrarEntryOf(id, r)),
            Effect.catchAll((e) =>
              Effect.succeed(inactiveEntry(id, e.status === 404 && NOT_ACTIVATED.test(e.reason) ? null : e.reason))
            )
          )
        }, { concurrency: 8 })
        return new Map(entries.map((e) => [e.id, e]))
      })

    /** How long the last verifier read took (ms): the pace backs off from it (below). */
    let lastReadMs = 0
    const sampleNow = Effect.gen(function*() {
      const startedAt = yield* Clock.currentTimeMillis
      const fromVerifier = yield* Effect.either(readVerifier)
      lastReadMs = (yield* Clock.currentTimeMillis) - startedAt
      const readReg = round % (o.registrarEvery ?? 3) === 0 || snapshot.registrarAgents === null || !snapshot.registrar.ok
      const fromRegistrar = readReg ? yield* Effect.either(readRegistrar(snapshot.registrarAgents)) : undefined
      round++
      const now = yield* Clock.currentTimeMillis
      let next: Snapshot = { ...snapshot, version: snapshot.version + 1, takenAt: now }
      if (Either.isRight(fromVerifier)) {
        next = { ...next, verifier: okStatus(o.verifierUrl), ...fromVerifier.right }
        recordSample(history, fromVerifier.right.agents, now)
      } else {
        // the version is asked again: the verifier may have been replaced
        versions = { ...versions, verifier: undefined }
        next = { ...next, verifier: failedStatus(snapshot.verifier, fromVerifier.left, now) }
        yield* Effect.logWarning(`dashboard: ${fromVerifier.left.message}`)
      }
      if (fromRegistrar !== undefined) {
        if (Either.isRight(fromRegistrar)) next = { ...next, registrar: okStatus(o.registrarUrl), registrarAgents: fromRegistrar.right }
        else {
          versions = { ...versions, registrar: undefined }
          next = { ...next, registrar: failedStatus(snapshot.registrar, fromRegistrar.left, now) }
          yield* Effect.logWarning(`dashboard: ${fromRegistrar.left.message}`)
        }
      }
      snapshot = next
      for (const l of listeners) l(next.version)
    }).pipe(Effect.withSpan("dashboard.sample"))

    // one sample before anyone reads, then at the pace asked, but never reading the verifier more
    // than a fifth of the time: its bulk status of a large fleet costs it CPU the attestations need
    // (1,200 agents: ~0.35 s each read; every 2 s it took 300 attestations/s from a saturated verifier)
    const interval = o.intervalMs ?? 2000
    yield* sampleNow
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.suspend(() => Effect.sleep(Math.max(interval, READ_SHARE_SPACING * lastReadMs))), sampleNow)))

    return Sampler.of({
      snapshot: () => snapshot,
      history,
      subscribe: (l) => {
        listeners.add(l)
        return () => listeners.delete(l)
      },
      sampleNow
    })
  })

export const SamplerLive = (o: SamplerOptions): Layer.Layer<Sampler> => Layer.scoped(Sampler, makeSampler(o))

export { UpstreamError }
