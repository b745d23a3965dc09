/**
 * Traces over OTLP/HTTP (JSON) when the section's `otlp_endpoint` is set; nothing at all when it is
 * empty (Effect's own tracer keeps creating its in-memory spans, as it always does, and nobody
 * reads them).
 *
 *   program.pipe(Effect.provide(Tracing.fromSection(section, "attest-registrar")))
 *
 * Every `Effect.fn`/`Effect.withSpan` span, the HTTP server span of each request (`HttpMiddleware
 * .tracer`, applied by every listener: it continues a `traceparent`/`b3` context from the request) and
 * the client span of each outgoing `HttpClient` request (which sends `traceparent` and `b3`) is
 * exported. Spans are queued as they end and POSTed to `<otlp_endpoint>/v1/traces` in batches every
 * `exportInterval` and when the layer closes (so a stopping server flushes what it has); a full
 * queue drops new spans and says so once. The exporter's own requests are not traced.
 *
 * This is attest's own exporter: `@effect/opentelemetry` (whose `Otlp.layer` does the same over
 * Effect's HttpClient) is not among the installed packages. Swapping it in is local to this file.
 */
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Layer, Schedule, Tracer } from "effect"
import { exportRequest, RecordedSpan, type Resource, tracesUrl } from "../src/ops/otlp.js"

export interface TracingOptions {
  /** Collector base URL (`http://127.0.0.1:4318`) or its traces URL; "" = no exporter. */
  readonly endpoint: string
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
  /** Default 2 seconds. */
  readonly exportInterval?: Duration.DurationInput
  /** Spans kept while the collector is slow or away (default 8192); beyond, new spans are dropped. */
  readonly maxQueuedSpans?: number
  /** Spans per request (default 512). */
  readonly maxBatch?: number
}

const exporterLayer = (o: TracingOptions): Layer.Layer<never> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const url = tracesUrl(o.endpoint)
    const resource: Resource = { serviceName: o.serviceName, serviceVersion: o.serviceVersion }
    const maxQueued = o.maxQueuedSpans ?? 8192
    const maxBatch = o.maxBatch ?? 512
    let queue: Array<RecordedSpan> = []
    let dropped = 0
    let failing = false
    const onEnd = (span: RecordedSpan) => {
      if (queue.length < maxQueued) queue.push(span)
      else dropped++
    }
    const tracer = Tracer.make({
      span: (name, parent, context, links, startTime, kind) => new RecordedSpan(name, parent, context, links, startTime, kind, onEnd),
      context: (f) => f()
    })

    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.filterStatusOk, HttpClient.withTracerPropagation(false))
    const post = (spans: ReadonlyArray<RecordedSpan>) =>
      client.execute(HttpClientRequest.post(url).pipe(HttpClientRequest.bodyUnsafeJson(exportRequest(resource, spans)))).pipe(
        Effect.timeout("10 seconds"),
        Effect.asVoid
      )
    const flush = Effect.gen(function*() {
      if (dropped > 0) {
        yield* Effect.logWarning(`OTLP exporter: queue full (${maxQueued} spans), ${dropped} spans dropped`)
        dropped = 0
      }
      while (queue.length > 0) {
        const batch = queue.slice(0, maxBatch)
        queue = queue.slice(batch.length)
        const sent = yield* Effect.either(post(batch))
        if (sent._tag === "Left") {
          // the batch is lost: keeping it would grow the queue while the collector is away
          if (!failing) yield* Effect.logWarning(`OTLP exporter: ${url} refused or unreachable (${sent.left.message}); spans are dropped until it answers`)
          failing = true
          return
        }
        if (failing) yield* Effect.logInfo(`OTLP exporter: ${url} reachable again`)
        failing = false
      }
    }).pipe(
      // the exporter's own requests and log lines are no spans (they would feed themselves)
      Effect.withTracerEnabled(false),
      // a batch taken from the queue is sent before the loop stops (at most the request timeout)
      Effect.uninterruptible
    )

    yield* Effect.addFinalizer(() => flush.pipe(Effect.timeout("5 seconds"), Effect.ignore))
    yield* flush.pipe(Effect.repeat(Schedule.spaced(o.exportInterval ?? Duration.seconds(2))), Effect.forkScoped)
    yield* Effect.logDebug(`OTLP exporter: spans go to ${url}`)
    return Layer.setTracer(tracer)
  })).pipe(Layer.provide(FetchHttpClient.layer))

export const Tracing = {
  /** The exporting tracer, or nothing when the endpoint is empty. */
  layer: (o: TracingOptions): Layer.Layer<never> => o.endpoint.trim() === "" ? Layer.empty : exporterLayer(o),

  /** From a section's `otlp_endpoint`. */
  fromSection: (section: { readonly otlp_endpoint: string }, serviceName: string, serviceVersion?: string): Layer.Layer<never> =>
    Tracing.layer({ endpoint: section.otlp_endpoint, serviceName, serviceVersion })
} as const
