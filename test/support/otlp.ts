/**
 * An OTLP/HTTP receiver for tests: every span POSTed to /v1/traces (OTLP/JSON), the requests and
 * the service names they came with; released with the scope.
 */
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  /** OTLP/JSON writes these int64s as decimal strings (or numbers). */
  readonly startTimeUnixNano?: string | number
  readonly endTimeUnixNano?: string | number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** An OTLP/HTTP receiver: every span POSTed to /v1/traces, and the service names it came with. */
export const receiver = Effect.acquireRelease(
  Effect.async<{ url: string; spans: Array<OtlpSpan>; requests: Array<string>; services: Set<string>; server: http.Server }>((resume) => {
    const spans: Array<OtlpSpan> = []
    const requests: Array<string> = []
    const services = new Set<string>()
    const server = http.createServer((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString()))
      req.on("end", () => {
        requests.push(`${req.method} ${req.url} ${req.headers["content-type"]}`)
        const doc = JSON.parse(body) as {
          resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: Array<OtlpSpan> }> }>
        }
        for (const rs of doc.resourceSpans) {
          for (const a of rs.resource.attributes) if (a.key === "service.name") services.add(a.value.stringValue ?? "")
          for (const ss of rs.scopeSpans) spans.push(...ss.spans)
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, requests, services, server })))
  }),
  (r) => Effect.async<void>((resume) => void r.server.close(() => resume(Effect.void)))
)

export const attr = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value
