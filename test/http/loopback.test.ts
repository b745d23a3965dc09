/** What "on this machine only" means for a listener address (issue 22 §8). */
import { describe, expect, it } from "@effect/vitest"
import { isLoopbackHost, isWildcardHost, localReach } from "../../src/http/loopback.js"

describe("loopback addresses", () => {
  it("takes 127.0.0.0/8, ::1 in any spelling, IPv4-mapped 127.x and localhost as loopback, nothing else", () => {
    const hosts = ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "localhost", "LOCALHOST",
      "0.0.0.0", "::", "[::]", "192.168.1.5", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "example.com", "localhost.example.com", "128.0.0.1", ""]
    expect(Object.fromEntries(hosts.map((h) => [h, isLoopbackHost(h)]))).toEqual({
      "127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "0:0:0:0:0:0:0:1": true, "::ffff:127.0.0.1": true, localhost: true, LOCALHOST: true,
      "0.0.0.0": false, "::": false, "[::]": false, "192.168.1.5": false, "10.0.0.1": false, "::ffff:10.0.0.1": false, "fe80::1": false,
      "example.com": false, "localhost.example.com": false, "128.0.0.1": false, "": false
    })
  })

  it("reaches a wildcard listener through loopback, any other through its own address", () => {
    expect(["0.0.0.0", "::", "0::0", "[::]", "127.0.0.1", "192.168.1.5"].map((h) => [h, isWildcardHost(h), localReach(h)])).toEqual([
      ["0.0.0.0", true, "127.0.0.1"],
      ["::", true, "::1"],
      ["0::0", true, "::1"],
      ["[::]", true, "::1"],
      ["127.0.0.1", false, "127.0.0.1"],
      ["192.168.1.5", false, "192.168.1.5"]
    ])
  })
})
