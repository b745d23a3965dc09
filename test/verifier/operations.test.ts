/**
 * Every route behind the verifier's authorization middlewares has its operation declared
 * (src/verifier/http/operations.ts): a route missing from the table would die on every request,
 * and the v2 agent status read and the push attestation routes name the path's agent as owner.
 */
import { describe, expect, it } from "@effect/vitest"
import type { HttpApiGroup } from "@effect/platform"
import { VerifierApi } from "../../src/verifier/http/Api.js"
import { V2Authorization, V3Authorization } from "../../src/verifier/http/authorization.js"
import { verifierOperations } from "../../src/verifier/http/operations.js"

const groups = Object.values((VerifierApi as unknown as { readonly groups: Record<string, HttpApiGroup.HttpApiGroup.AnyWithProps> }).groups)
const guarded = (g: HttpApiGroup.HttpApiGroup.AnyWithProps) => [...g.middlewares].some((m) => m.key === V2Authorization.key || m.key === V3Authorization.key)

describe("verifier operations", () => {
  it("declares an operation for every route behind an authorization middleware", () => {
    const missing = groups.filter(guarded).flatMap((g) =>
      Object.values(g.endpoints).filter((e) => verifierOperations.find(e.method, e.path) === undefined).map((e) => `${g.identifier}.${e.name}`)
    )
    expect(missing).toEqual([])
    // every group but the GET / redirect is guarded
    expect(groups.filter((g) => !guarded(g)).map((g) => g.identifier)).toEqual(["root"])
  })

  it("names the path's agent as the owner where an agent may act", () => {
    expect(verifierOperations.find("GET", "/agents/:agent_id")).toEqual({ action: "read_agent", operationClass: "agentOrAdmin", resourceParam: "agent_id" })
    expect(verifierOperations.find("POST", "/v3/agents/:agent_id/attestations")).toEqual({ action: "submit_attestation", operationClass: "agent", resourceParam: "agent_id" })
    expect(verifierOperations.find("PATCH", "/v3/agents/:agent_id/attestations/:index")).toEqual({ action: "submit_attestation", operationClass: "agent", resourceParam: "agent_id" })
    expect(verifierOperations.find("DELETE", "/agents/:agent_id")).toEqual({ action: "delete_agent", operationClass: "admin" })
  })
})
