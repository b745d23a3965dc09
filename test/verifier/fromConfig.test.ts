/**
 * VerifierFromConfig(section, poller): the `[verifier]` section → TLS generated in ca_dir, SQLite
 * under data_dir, the HTTPS listener, and the pull loop given as a Layer that receives the
 * verifier's repositories (here a poller that reads AgentRepo, as the real one does) and is told
 * of every added agent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { rawRequest } from "../../src/http/client.js"
import { CA_FILES } from "../../src/pki/layout.js"
import { Verifier, verifierOptions } from "../../src/verifier/index.js"
import { PollerControl } from "../../src/verifier/domain/PollerControl.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { validBody } from "./support.js"

describe("Verifier (VerifierFromConfig), as attest/verifier exports it", () => {
  it.scopedLive("serves the section's verifier and hands the poller the repositories it needs", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "attest-verifier-config-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const caDir = join(dir, "cv_ca")
      const section = verifierOptions({ port: 0, tls_dir: "generate", ca_dir: caDir, data_dir: join(dir, "data"), metrics_port: 0 })
      const seen: Array<string> = []
      // a poller that reads the agent's row when told to start, as the pull loop does
      const poller = Layer.effect(
        PollerControl,
        Effect.map(AgentRepo, (repo) => ({
          start: (agentId: string) =>
            Effect.orDie(repo.find(agentId)).pipe(Effect.map((row) => void seen.push(`${agentId}:${Option.map(row, (r) => r.operational_state).pipe(Option.getOrElse(() => -1))}`))),
          stop: () => Effect.void,
          isOwned: () => Effect.succeed(true)
        }))
      )
      const ctx = yield* Layer.build(Verifier(section, poller))
      const url = Context.get(ctx, BoundListeners).get("verifier")!.url
      const tls = {
        ca: readFileSync(join(caDir, CA_FILES.caCert), "utf8"),
        cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"),
        key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8")
      }
      const id = "d432fbb3-d2f1-4a97-9ef7-75bd81c00011"
      const added = yield* Effect.orDie(rawRequest({
        method: "POST",
        baseUrl: url,
        path: `/v2.6/agents/${id}`,
        tls,
        body: JSON.stringify(validBody()),
        headers: { "content-type": "application/json" }
      }))
      expect(added.status).toBe(200)
      expect(seen).toEqual([`${id}:1`])
      const jwks = yield* Effect.orDie(rawRequest({ method: "GET", baseUrl: url, path: "/.well-known/ear-jwks.json", tls: { ca: tls.ca } }))
      expect(jwks.status).toBe(200)
      expect(readFileSync(join(caDir, "ear-signing-key.pem"), "utf8")).toMatch(/BEGIN PRIVATE KEY/)
    }))
})
