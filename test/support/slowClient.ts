/**
 * Clients that hold a listener's connection without finishing a request (issue 22 §6), for the
 * slow-client tests of every listener:
 *
 *   - "drip": sends a request's headers one byte every `everyMs` (then a header value that never
 *     ends), over TLS on an https URL (after a complete handshake);
 *   - "dripBody": sends complete headers of a POST announcing 1 MB, then its body one byte at a time;
 *   - "idle": sends one complete GET (keep-alive), reads the answer, then nothing;
 *   - "silent": opens the TCP connection and sends nothing (on a TLS listener: no handshake);
 *
 * and answer how long the server let the connection live, or `undefined` when it was still open
 * after `giveUpMs` (the client then closes it itself).
 *
 *   const r = yield* holdConnection({ url: "https://127.0.0.1:8881", mode: "drip", tls: admin, giveUpMs: 40_000 })
 *   expect(r.closedAfterMs).toBeLessThan(…)
 */
import { Effect } from "effect"
import { readdirSync } from "node:fs"
import * as net from "node:net"
import * as tls from "node:tls"

export interface HoldOptions {
  readonly url: string
  readonly mode: "drip" | "dripBody" | "idle" | "silent"
  /** Client identity for a TLS handshake (PEM); without it no certificate is offered. */
  readonly tls?: { readonly ca?: string; readonly cert?: string; readonly key?: string }
  readonly everyMs?: number
  readonly giveUpMs: number
}

export interface Held {
  /** Milliseconds from connecting to the server closing the connection; undefined: still open at giveUpMs. */
  readonly closedAfterMs: number | undefined
  /** The bytes the server sent before closing (e.g. `HTTP/1.1 408 …`). */
  readonly received: string
  /** Bytes of the request the client managed to send. */
  readonly sent: number
}

const REQUEST_START = "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
const BODY_HEADERS = "POST /v2.6/agents/slow-body HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
const COMPLETE_GET = "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

export const holdConnection = (o: HoldOptions): Effect.Effect<Held> =>
  Effect.async<Held>((resume) => {
    const url = new URL(o.url)
    const host = url.hostname.replace(/^\[|\]$/g, "")
    const port = Number(url.port)
    const secure = url.protocol === "https:" && o.mode !== "silent"
    const started = performance.now()
    const socket: net.Socket = secure
      ? tls.connect({ host, port, rejectUnauthorized: false, ...(o.tls?.cert ? { cert: o.tls.cert, key: o.tls.key } : {}) })
      : net.connect({ host, port })
    let received = ""
    let sent = 0
    let drip: ReturnType<typeof setInterval> | undefined
    let done = false
    const finish = (closedAfterMs: number | undefined) => {
      if (done) return
      done = true
      if (drip !== undefined) clearInterval(drip)
      clearTimeout(giveUp)
      socket.destroy()
      resume(Effect.succeed({ closedAfterMs, received, sent }))
    }
    const giveUp = setTimeout(() => finish(undefined), o.giveUpMs)
    socket.on(secure ? "secureConnect" : "connect", () => {
      if (o.mode === "silent") return
      if (o.mode === "idle") {
        socket.write(COMPLETE_GET)
        sent = COMPLETE_GET.length
        return
      }
      if (o.mode === "dripBody") {
        socket.write(BODY_HEADERS)
        sent = BODY_HEADERS.length
      }
      drip = setInterval(() => {
        if (socket.destroyed || !socket.writable) return
        socket.write(o.mode === "drip" && sent < REQUEST_START.length ? REQUEST_START[sent]! : o.mode === "drip" ? "a" : " ")
        sent++
      }, o.everyMs ?? 500)
    })
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")))
    socket.on("error", () => undefined)
    socket.on("close", () => finish(performance.now() - started))
    return Effect.sync(() => finish(undefined))
  })

/** This process's open file descriptors (Linux), to show held connections are released. */
export const openDescriptors = (): number => readdirSync("/proc/self/fd").length
