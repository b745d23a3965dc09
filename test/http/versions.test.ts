import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { atLeast, matchVersionPrefix, V2_VERSIONS } from "../../src/http/versions.js"

describe("API version prefixes", () => {
  it("routes every served 2.x version and strips the prefix", () => {
    for (const v of V2_VERSIONS.supported) {
      expect(matchVersionPrefix(`/v${v}/agents/a1`, V2_VERSIONS)).toEqual({
        _tag: "Versioned",
        version: { major: 2, minor: Number(v.split(".")[1]) },
        rest: "/agents/a1"
      })
    }
  })

  it("treats /v2 as the newest 2.x", () => {
    expect(matchVersionPrefix("/v2/agents", V2_VERSIONS)).toEqual({ _tag: "Versioned", version: { major: 2, minor: 6 }, rest: "/agents" })
  })

  it("refuses versions it does not serve and leaves other paths unversioned", () => {
    expect(matchVersionPrefix("/v1.0/agents", V2_VERSIONS)).toEqual({ _tag: "Unsupported", requested: "1.0" })
    expect(matchVersionPrefix("/v3.0/agents", V2_VERSIONS)).toEqual({ _tag: "Unsupported", requested: "3.0" })
    expect(matchVersionPrefix("/v9.9", V2_VERSIONS)).toEqual({ _tag: "Unsupported", requested: "9.9" })
    expect(matchVersionPrefix("/versions", V2_VERSIONS)).toEqual({ _tag: "Unversioned" })
    expect(matchVersionPrefix("/agents/x", V2_VERSIONS)).toEqual({ _tag: "Unversioned" })
    expect(matchVersionPrefix("/v2.6", V2_VERSIONS)).toEqual({ _tag: "Versioned", version: { major: 2, minor: 6 }, rest: "/" })
  })

  it("never throws and only routes to served versions, whatever the path", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string().map((s) => `/v${s}`), fc.string().map((s) => `/v2.${s}`)), (path) => {
        const m = matchVersionPrefix(path, V2_VERSIONS)
        if (m._tag === "Versioned") {
          expect(V2_VERSIONS.supported).toContain(`${m.version.major}.${m.version.minor}`)
          expect(m.rest.startsWith("/")).toBe(true)
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("compares versions for per-version field variants", () => {
    expect(atLeast({ major: 2, minor: 5 }, "2.5")).toBe(true)
    expect(atLeast({ major: 2, minor: 4 }, "2.5")).toBe(false)
    expect(atLeast({ major: 3, minor: 0 }, "2.5")).toBe(true)
  })
})
