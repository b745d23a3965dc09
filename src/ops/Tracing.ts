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
 * exported by @effect/opentelemetry's OTLP tracer (`OtlpTracer`, Effect's own HttpClient, no
 * OpenTelemetry SDK): batched every `exportInterval`, flushed when the layer closes.
 */
import { FetchHttpClient } from "@effect/platform"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { Duration, Layer } from "effect"

export interface TracingOptions {
  /** Collector base URL (`http://127.0.0.1:4318`) or its traces URL; "" = no exporter. */
  readonly endpoint: string
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
  /** Default 2 seconds. */
  readonly exportInterval?: Duration.DurationInput
  /** Spans per request (default 512). */
  readonly maxBatch?: number
}

/** `<endpoint>/v1/traces`, or the endpoint itself when it already names the traces path. */
export const tracesUrl = (endpoint: string): string => {
  const base = endpoint.trim().replace(/\/+$/, "")
  return base.endsWith("/v1/traces") ? base : `${base}/v1/traces`
}

const exporterLayer = (o: TracingOptions): Layer.Layer<never> =>
  OtlpTracer.layer({
    url: tracesUrl(o.endpoint),
    resource: { serviceName: o.serviceName, serviceVersion: o.serviceVersion },
    exportInterval: o.exportInterval ?? Duration.seconds(2),
    maxBatchSize: o.maxBatch ?? 512,
    shutdownTimeout: Duration.seconds(5)
  }).pipe(Layer.provide([FetchHttpClient.layer, OtlpSerialization.layerJson]))

export const Tracing = {
  /** The exporting tracer, or nothing when the endpoint is empty. */
  layer: (o: TracingOptions): Layer.Layer<never> => o.endpoint.trim() === "" ? Layer.empty : exporterLayer(o),

  /** From a section's `otlp_endpoint`. */
  fromSection: (section: { readonly otlp_endpoint: string }, serviceName: string, serviceVersion?: string): Layer.Layer<never> =>
    Tracing.layer({ endpoint: section.otlp_endpoint, serviceName, serviceVersion })
} as const
