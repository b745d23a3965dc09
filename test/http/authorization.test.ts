import { describe, expect, it } from "@effect/vitest"
import { AuthorizationText, simpleDecision, type OperationClass } from "../../src/http/authorization.js"
import type { Identity } from "../../src/http/identity.js"

const admin: Identity = { _tag: "Admin", name: "client" }
const agentA: Identity = { _tag: "Agent", agentId: "a" }
const anonymous: Identity = { _tag: "Anonymous", reason: "no client certificate" }

const decide = (operationClass: OperationClass, identity: Identity, resourceAgentId = "a") =>
  simpleDecision({ action: "test", operationClass, identity, resourceAgentId })

describe("the simple authorization provider", () => {
  it("allows public operations to anyone", () => {
    for (const who of [admin, agentA, anonymous]) expect(decide("public", who)).toBeUndefined()
  })

  it("allows admin operations to admins only, with the §7.3 text", () => {
    expect(decide("admin", admin)).toBeUndefined()
    expect(decide("admin", agentA)).toBe(AuthorizationText.adminRequired)
    expect(decide("admin", anonymous)).toBe("Action requires admin authentication (mTLS certificate)")
  })

  it("allows agent-only operations to the owning agent and never to an admin", () => {
    expect(decide("agent", agentA)).toBeUndefined()
    expect(decide("agent", agentA, "b")).toBe("Agent cannot access resource (ownership required)")
    expect(decide("agent", admin)).toBe("Action requires agent authentication (PoP token)")
    expect(decide("agent", anonymous)).toBe(AuthorizationText.agentRequired)
  })

  it("allows agent-or-admin operations to an admin or the owning agent", () => {
    expect(decide("agentOrAdmin", admin)).toBeUndefined()
    expect(decide("agentOrAdmin", agentA)).toBeUndefined()
    expect(decide("agentOrAdmin", agentA, "b")).toBe(AuthorizationText.ownershipRequired)
    expect(decide("agentOrAdmin", anonymous)).toBe(AuthorizationText.adminRequired)
  })
})
