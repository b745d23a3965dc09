/**
 * The agent's routes over HTTPS (mutual TLS with the server components CA's client certificate) on a
 * simulated TPM and machine, fuzzed from its OpenAPI document: no 5xx, Keylime's envelope, and no
 * file of its data directory written or changed by a refused request.
 */
import { describe } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { vectorPath } from "../support/vectors.js"
import { makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { fuzzWith } from "./harness.js"
import { checkRequest, type Family, requestArb, routesOf, snapshotFiles } from "./routes.js"

const AGENT = "d432fbb3-d2f1-4a97-9ef7-75bd81c00041"

const agentServer = Effect.gen(function*() {
  const ca = yield* makeTestCa(yield* tempDir("attest-fuzz-agent-ca-"))
  const dataDir = yield* tempDir("attest-fuzz-agent-")
  const ctx = yield* Layer.build(simulatedAgentLayer(
    {
      agentId: AGENT,
      dataDir,
      trustedClientCa: ca.caPem,
      revocationCert: readFileSync(vectorPath("rust-keylime/keylime-agent/test-data/test-cert.pem"), "utf8")
    },
    { name: "fuzz-machine" },
    { seed: "fuzz-agent" }
  ))
  const agent = Context.get(ctx, RunningAgent)
  return {
    url: agent.url,
    tls: { ca: agent.serverCert, cert: ca.clientCert, key: ca.clientKey, checkServerIdentity: false as const },
    rows: () => Promise.resolve(snapshotFiles(join(dataDir)))
  }
})

const familyOf = (req: { readonly path: string }): Family => (req.path.split("?")[0] === "/version" ? "any-json" : "keylime")

describe("fuzz: agent routes", () => {
  fuzzWith(agentServer, {
    name: "agent-routes",
    runs: 100,
    input: requestArb(routesOf("agent"), { params: {}, extraPaths: ["/version", "/"] }),
    check: (req, server) => checkRequest(server, req, familyOf)
  })
})
