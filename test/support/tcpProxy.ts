/**
 * A TCP relay in front of a real server (PostgreSQL), for failures a test cannot get otherwise:
 * `failNextWrite()` cuts the first existing connection that sends anything (a pooled connection
 * dying under a query, once), `refuse()` cuts every connection and every new one (the database is
 * down), `accept()` relays again. Nothing is simulated: the client talks to the real server and
 * sees real connection loss.
 */
import * as net from "node:net"

export interface TcpProxy {
  readonly port: number
  /** The first connection open now that sends data is cut before the data is relayed. */
  readonly failNextWrite: () => void
  readonly refuse: () => void
  readonly accept: () => void
  /** Connections relayed now, and the most ever open at once. */
  readonly connections: () => { readonly open: number; readonly peak: number }
  readonly close: () => Promise<void>
}

export const startTcpProxy = (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> =>
  new Promise((resolve, reject) => {
    const open = new Set<net.Socket>()
    const doomed = new Set<net.Socket>()
    let refusing = false
    let peak = 0
    const server = net.createServer((client) => {
      if (refusing) {
        client.destroy()
        return
      }
      const upstream = net.connect(target)
      open.add(client)
      peak = Math.max(peak, open.size)
      const cut = () => {
        open.delete(client)
        doomed.delete(client)
        client.destroy()
        upstream.destroy()
      }
      client.on("data", (d) => {
        if (doomed.has(client)) {
          doomed.clear() // once
          cut()
          return
        }
        upstream.write(d)
      })
      upstream.on("data", (d) => client.write(d))
      client.on("close", cut)
      upstream.on("close", cut)
      client.on("error", cut)
      upstream.on("error", cut)
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        failNextWrite: () => {
          for (const s of open) doomed.add(s)
        },
        refuse: () => {
          refusing = true
          for (const s of [...open]) s.destroy()
        },
        accept: () => {
          refusing = false
        },
        connections: () => ({ open: open.size, peak }),
        close: () =>
          new Promise<void>((r) => {
            for (const s of [...open]) s.destroy()
            server.close(() => r())
          })
      })
    })
  })
