/**
 * The outside probes of issue 8 as cheap helpers, for any attest server (registrar listeners,
 * agent, later the verifier): a TLS handshake with chosen suites, and raw bytes on a socket (plain
 * or TLS) with the whole answer read back, for requests node's own client would refuse to send.
 */
import * as net from "node:net"
import * as tls from "node:tls"

export interface ClientCertificate {
  readonly cert: string
  readonly key: string
}

export type Handshake =
  | { readonly ok: true; readonly protocol: string; readonly cipher: string }
  | { readonly ok: false; readonly error: string }

/** One TLS handshake with the given cipher list (TLS 1.2 only when `tls12Only`). */
export const tlsHandshake = (
  url: string,
  options: { readonly ciphers?: string; readonly tls12Only?: boolean; readonly client?: ClientCertificate }
): Promise<Handshake> =>
  new Promise((resolve) => {
    const u = new URL(url)
    const socket = tls.connect({
      host: u.hostname,
      port: Number(u.port),
      rejectUnauthorized: false,
      ...(options.ciphers === undefined ? {} : { ciphers: options.ciphers }),
      ...(options.tls12Only ? { maxVersion: "TLSv1.2" as const } : {}),
      ...(options.client ?? {})
    })
    const done = (h: Handshake) => {
      socket.destroy()
      resolve(h)
    }
    socket.setTimeout(20_000, () => done({ ok: false, error: "timeout" }))
    socket.once("secureConnect", () =>
      done({ ok: true, protocol: socket.getProtocol() ?? "", cipher: socket.getCipher().standardName ?? socket.getCipher().name })
    )
    socket.once("error", (e: NodeJS.ErrnoException) => done({ ok: false, error: e.code ?? e.message }))
  })

export interface RawAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** How the exchange ended when no complete answer came (e.g. ECONNRESET). */
  readonly error?: string
}

/**
 * Writes `chunks` (in order, each flushed) on a fresh connection and reads until the server
 * closes or a complete `Content-Length` answer arrived.
 */
export const rawExchange = (
  url: string,
  chunks: ReadonlyArray<string | Uint8Array>,
  options: { readonly client?: ClientCertificate } = {}
): Promise<RawAnswer> =>
  new Promise((resolve) => {
    const u = new URL(url)
    const port = Number(u.port)
    const socket: net.Socket = u.protocol === "https:"
      ? tls.connect({ host: u.hostname, port, rejectUnauthorized: false, ...(options.client ?? {}) })
      : net.connect({ host: u.hostname, port })
    let data = Buffer.alloc(0)
    let settled = false
    const parse = (error?: string): RawAnswer | undefined => {
      const text = data.toString("latin1")
      const end = text.indexOf("\r\n\r\n")
      if (end < 0) return error === undefined ? undefined : { status: 0, headers: {}, body: "", error }
      const [line, ...fields] = text.slice(0, end).split("\r\n")
      const headers: Record<string, string> = {}
      for (const f of fields) {
        const i = f.indexOf(":")
        headers[f.slice(0, i).trim().toLowerCase()] = f.slice(i + 1).trim()
      }
      const body = data.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1"))
      const length = headers["content-length"]
      if (length !== undefined && body.length < Number(length) && error === undefined) return undefined
      return {
        status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(line ?? "")?.[1] ?? 0),
        headers,
        body: body.toString("utf8"),
        ...(error === undefined ? {} : { error })
      }
    }
    const finish = (error?: string) => {
      if (settled) return
      const answer = parse(error ?? "closed")
      settled = true
      socket.destroy()
      resolve(answer!.status > 0 ? { ...answer!, ...(error === undefined ? {} : { error }) } : answer!)
    }
    socket.setTimeout(30_000, () => finish("timeout"))
    socket.on("data", (d: Buffer) => {
      data = Buffer.concat([data, d])
      const complete = parse()
      if (complete !== undefined && complete.headers["content-length"] !== undefined && !settled) {
        settled = true
        socket.destroy()
        resolve(complete)
      }
    })
    socket.once("error", (e: NodeJS.ErrnoException) => finish(e.code ?? e.message))
    socket.once("close", () => finish())
    const ready = u.protocol === "https:" ? "secureConnect" : "connect"
    socket.once(ready, async () => {
      for (const c of chunks) {
        if (socket.destroyed) return
        await new Promise<void>((r) => socket.write(c, () => r()))
      }
    })
  })

/** The refused TLS 1.2 suites of issue 8 and one allowed suite, with the handshake each must give. */
export const REFUSED_SUITES = ["AES128-SHA", "AES256-SHA256", "ECDHE-RSA-AES128-SHA"] as const
export const ALLOWED_TLS12_SUITE = "ECDHE-RSA-AES128-GCM-SHA256"

/**
 * A JSON body whose `field` holds arrays nested `depth` levels deep: 5,000 levels are 10 KB, and
 * decoding them overflowed the stack (a 500 with "Maximum call stack size exceeded").
 */
export const deepJson = (depth: number, field = "auth_tag"): string => `{"${field}":${"[".repeat(depth)}${"]".repeat(depth)}}`
