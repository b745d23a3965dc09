/**
 * A TCP relay that injects the network faults a fleet meets, between two real endpoints (the
 * verifier and an agent): `pass` relays; `delay` holds every chunk for some milliseconds each way;
 * `blackhole` accepts and reads but never relays (a half-open peer: the client waits for an answer
 * that never comes); `reset` cuts a connection as soon as the client sends; `refuse` cuts every
 * connection at accept. Changing the mode applies to new and open connections alike. `open` counts
 * the connections the proxy holds, so a test can see the client let go of its sockets.
 */
import * as net from "node:net"

export type FaultMode =
  | { readonly _tag: "pass" }
  | { readonly _tag: "delay"; readonly ms: number }
  | { readonly _tag: "blackhole" }
  | { readonly _tag: "reset" }
  | { readonly _tag: "refuse" }

export interface FaultProxy {
  readonly port: number
  readonly set: (mode: FaultMode) => void
  /** Connections the proxy holds now (client side). */
  readonly open: () => number
  /** Connections accepted since start. */
  readonly accepted: () => number
  readonly close: () => Promise<void>
}

export const startFaultProxy = (target: { readonly host: string; readonly port: number }): Promise<FaultProxy> =>
  new Promise((resolve, reject) => {
    let mode: FaultMode = { _tag: "pass" }
    let accepted = 0
    const pairs = new Map<net.Socket, net.Socket>()
    const cut = (client: net.Socket) => {
      const upstream = pairs.get(client)
      pairs.delete(client)
      client.destroy()
      upstream?.destroy()
    }
    /** Relays one chunk in the current mode; false when the connection was cut. */
    const relay = (client: net.Socket, to: net.Socket, chunk: Buffer): void => {
      switch (mode._tag) {
        case "pass":
          to.write(chunk)
          return
        case "delay": {
          const later = setTimeout(() => to.destroyed || to.write(chunk), mode.ms)
          to.once("close", () => clearTimeout(later))
          return
        }
        case "blackhole":
          return
        case "reset":
        case "refuse":
          cut(client)
          return
      }
    }
    const server = net.createServer((client) => {
      accepted++
      if (mode._tag === "refuse") {
        client.destroy()
        return
      }
      const upstream = net.connect(target)
      pairs.set(client, upstream)
      client.on("data", (d: Buffer) => relay(client, upstream, d))
      upstream.on("data", (d: Buffer) => relay(client, client, d))
      client.on("close", () => cut(client))
      upstream.on("close", () => cut(client))
      client.on("error", () => cut(client))
      upstream.on("error", () => cut(client))
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        set: (m) => {
          mode = m
          if (m._tag === "refuse") for (const c of [...pairs.keys()]) cut(c)
        },
        open: () => pairs.size,
        accepted: () => accepted,
        close: () =>
          new Promise<void>((done) => {
            for (const c of [...pairs.keys()]) cut(c)
            server.close(() => done())
          })
      })
    })
  })
