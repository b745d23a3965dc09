/**
 * Loopback and wildcard addresses (issue 22 §8): what "on this machine only" means for a listener.
 * Loopback is 127.0.0.0/8, ::1 (and its IPv4-mapped form ::ffff:127.x.x.x) and the name
 * `localhost`; a wildcard (0.0.0.0, ::) listens on every interface, and is reached from this
 * machine through loopback.
 *
 *   isLoopbackHost("127.0.0.1")  // true      isLoopbackHost("0.0.0.0")  // false
 *   localReach("0.0.0.0")        // "127.0.0.1": where this machine's own clients connect
 */
import * as net from "node:net"

const unbracket = (host: string): string => host.replace(/^\[(.*)\]$/, "$1").toLowerCase()

/** True when `host` (an address or `localhost`, IPv6 with or without brackets) is a loopback address. */
export const isLoopbackHost = (host: string): boolean => {
  const h = unbracket(host)
  if (h === "localhost") return true
  switch (net.isIP(h)) {
    case 4:
      return h.startsWith("127.")
    case 6: {
      const mapped = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h)
      if (mapped !== null) return mapped[1]!.startsWith("127.")
      return net.isIPv6(h) && new net.SocketAddress({ address: h, family: "ipv6" }).address === "::1"
    }
    default:
      return false
  }
}

/** True for the any-interface addresses 0.0.0.0 and ::. */
export const isWildcardHost = (host: string): boolean => {
  const h = unbracket(host)
  return h === "0.0.0.0" || (net.isIPv6(h) && new net.SocketAddress({ address: h, family: "ipv6" }).address === "::")
}

/** The address this machine's own clients use to reach a listener on `host` (loopback for a wildcard). */
export const localReach = (host: string): string => {
  if (!isWildcardHost(host)) return host
  return unbracket(host) === "0.0.0.0" ? "127.0.0.1" : "::1"
}
