/**
 * Spans as OTLP/HTTP JSON (the `ExportTraceServiceRequest` of opentelemetry-proto, JSON mapping):
 * the span class the exporting tracer creates, and the pure encoding of a batch. Trace and span
 * ids are lowercase hex (W3C trace context), times are epoch nanoseconds as decimal strings.
 */
import { Cause, type Context, Exit, Option, type Tracer } from "effect"
import * as crypto from "node:crypto"

/** A finished (or running) span as the exporter keeps it. */
export class RecordedSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId: string
  readonly traceId: string
  readonly sampled = true
  status: Tracer.SpanStatus
  readonly attributes = new Map<string, unknown>()
  readonly events: Array<readonly [name: string, startTime: bigint, attributes: Record<string, unknown>]> = []
  readonly links: Array<Tracer.SpanLink>

  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: Iterable<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    private readonly onEnd: (span: RecordedSpan) => void
  ) {
    this.status = { _tag: "Started", startTime }
    this.traceId = Option.isSome(parent) ? parent.value.traceId : crypto.randomBytes(16).toString("hex")
    this.spanId = crypto.randomBytes(8).toString("hex")
    this.links = Array.from(links)
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    this.onEnd(this)
  }

  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    this.events.push([name, startTime, attributes ?? {}])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    for (const l of links) this.links.push(l)
  }
}

type AnyValue =
  | { readonly stringValue: string }
  | { readonly boolValue: boolean }
  | { readonly intValue: string }
  | { readonly doubleValue: number }
  | { readonly arrayValue: { readonly values: ReadonlyArray<AnyValue> } }

export interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

const anyValue = (v: unknown): AnyValue => {
  switch (typeof v) {
    case "string":
      return { stringValue: v }
    case "boolean":
      return { boolValue: v }
    case "bigint":
      return { intValue: v.toString() }
    case "number":
      return Number.isSafeInteger(v) ? { intValue: String(v) } : { doubleValue: v }
    default:
      if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue) } }
      try {
        return { stringValue: JSON.stringify(v) ?? String(v) }
      } catch {
        return { stringValue: String(v) }
      }
  }
}

export const attributesOf = (entries: Iterable<readonly [string, unknown]>): Array<KeyValue> => {
  const out: Array<KeyValue> = []
  for (const [key, value] of entries) out.push({ key, value: anyValue(value) })
  return out
}

/** opentelemetry-proto `Span.SpanKind`. */
const KIND: Readonly<Record<Tracer.SpanKind, number>> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

/** opentelemetry-proto `Status`: OK for a success, ERROR with the cause's first line for a failure. */
const statusOf = (exit: Exit.Exit<unknown, unknown>): { readonly code: number; readonly message?: string } => {
  if (Exit.isSuccess(exit)) return { code: 1 }
  if (Cause.isInterruptedOnly(exit.cause)) return { code: 0, message: "interrupted" }
  const text = Cause.pretty(exit.cause)
  const firstLine = text.split("\n", 1)[0] ?? text
  return { code: 2, message: firstLine.length > 512 ? `${firstLine.slice(0, 509)}...` : firstLine }
}

export const encodeSpan = (span: RecordedSpan) => {
  const status = span.status
  const end = status._tag === "Ended" ? status.endTime : status.startTime
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(Option.isSome(span.parent) ? { parentSpanId: span.parent.value.spanId } : {}),
    name: span.name,
    kind: KIND[span.kind],
    startTimeUnixNano: status.startTime.toString(),
    endTimeUnixNano: end.toString(),
    attributes: attributesOf(span.attributes),
    events: span.events.map(([name, time, attributes]) => ({ timeUnixNano: time.toString(), name, attributes: attributesOf(Object.entries(attributes)) })),
    links: span.links.map((l) => ({ traceId: l.span.traceId, spanId: l.span.spanId, attributes: attributesOf(Object.entries(l.attributes)) })),
    status: status._tag === "Ended" ? statusOf(status.exit) : { code: 0 }
  }
}

export interface Resource {
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
}

/** One `ExportTraceServiceRequest` carrying the spans of one resource. */
export const exportRequest = (resource: Resource, spans: ReadonlyArray<RecordedSpan>) => ({
  resourceSpans: [{
    resource: {
      attributes: attributesOf([
        ["service.name", resource.serviceName],
        ...(resource.serviceVersion === undefined ? [] : [["service.version", resource.serviceVersion] as const])
      ])
    },
    scopeSpans: [{ scope: { name: "attest", ...(resource.serviceVersion === undefined ? {} : { version: resource.serviceVersion }) }, spans: spans.map(encodeSpan) }]
  }]
})

/** `<endpoint>/v1/traces`, unless the endpoint already names the traces path. */
export const tracesUrl = (endpoint: string): string => {
  const base = endpoint.trim().replace(/\/+$/, "")
  return base.endsWith("/v1/traces") ? base : `${base}/v1/traces`
}
