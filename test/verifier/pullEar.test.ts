/**
 * A pull agent's latest verdict as an EAR, on SQLite and PostgreSQL: a simulated agent polled by the
 * real loop over HTTPS, the verifier's API over HTTPS; GET /v3.0/agents/<id>/attestations/latest
 * with Accept: application/eat+jwt answers a token signed from the verdict's stored facts
 * (migration 0023) that verifies with the published JWKS: affirming while quotes pass (nonce one
 * the loop sent, iat the verdict's time), contraindicated with the IMA failure after the machine
 * runs an unlisted file; a changed byte fails. Without the Accept header (or for a numbered
 * attestation) a pull agent still has no push attestation: 404.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Option } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { ServerTlsWithAdmins } from "../../src/http/Tls.js"
import { SimulatedMachine } from "../../src/agent/measurements/SimulatedMachine.js"
import { sectionDefaults } from "../../src/config/load.js"
import { verifierSection } from "../../src/config/sections.js"
import { keysFromJwks } from "../../src/ear/key.js"
import { EAR_MEDIA_TYPE, verifyEar } from "../../src/ear/token.js"
import { rawRequest } from "../../src/http/client.js"
import { CA_FILES } from "../../src/pki/ca.js"
import { Agents } from "../../src/verifier/domain/Agents.js"
import { AgentRepo } from "../../src/verifier/domain/repo/AgentRepo.js"
import { VERIFIER_LISTENER, VerifierServerLive } from "../../src/verifier/Server.js"
import { testDatabase } from "../support/db.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"
import { agentBody, newClientLog, verifierWithPoller, waitFor } from "./pollerSupport.js"
import { backends } from "./support.js"

const agentId = "ea400000-d2f1-4a97-9ef7-75bd81c0e001"

for (const [backend, available] of backends) describe.skipIf(!available)(`a pull agent's EAR on ${backend}`, () => {
  it.scopedLive("is signed from the last verdict: affirming while quotes pass, contraindicated after tampering, refused when a byte changes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-pull-ear-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const agentCtx = yield* Layer.build(simulatedAgentLayer(
        { agentId, dataDir: join(dir, "agent"), trustedClientCa: ca.caPem, revocationCert: ca.clientCert },
        { name: "pull-ear-machine" },
        { seed: `pull-ear-${backend}` }
      ))
      const agent = Context.get(agentCtx, RunningAgent)
      const machine = Context.get(agentCtx, SimulatedMachine)
      const log = newClientLog()
      const caDir = join(dir, "cv_ca")
      const ctx = yield* Layer.build(VerifierServerLive({ host: "127.0.0.1", port: 0 }).pipe(
        Layer.provideMerge(verifierWithPoller(yield* testDatabase(backend), ca, { quote_interval: 1, retry_interval: 1 }, log)),
        Layer.provideMerge(ServerTlsWithAdmins("verifier", sectionDefaults(verifierSection, { ca_dir: caDir, port: 0 }))),
        Layer.orDie
      ))
      const url = Context.get(ctx, BoundListeners).get(VERIFIER_LISTENER)!.url
      const caPem = readFileSync(join(caDir, CA_FILES.caCert), "utf8")
      const admin = { ca: caPem, cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"), key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8") }
      const get = (path: string, accept?: string) =>
        Effect.orDie(rawRequest({ method: "GET", baseUrl: url, path, tls: admin, ...(accept === undefined ? {} : { headers: { accept } }) }))
      const keys = Either.getOrThrow(keysFromJwks((yield* get("/.well-known/ear-jwks.json")).body))
      const latestEar = Effect.map(get(`/v3.0/agents/${agentId}/attestations/latest`, EAR_MEDIA_TYPE), (r) => {
        expect([r.status, r.headers["content-type"]?.split(";")[0]]).toEqual([200, EAR_MEDIA_TYPE])
        return r.body
      })
      const row = Effect.map(Context.get(ctx, AgentRepo).find(agentId), Option.getOrThrow)

      // enrolled: the loop polls it every second
      yield* Context.get(ctx, Agents).add(agentId, agentBody(agent, { revocationKey: ca.clientKey }))
      const attested = yield* waitFor("2 attestations", row, (r) => r.attestation_count >= 2 && r.operational_state === 3)
      expect(attested.attestation_count).toBeGreaterThanOrEqual(2)

      const good = (yield* verifyEar(yield* latestEar, keys)).claims
      const nonces = log.quotes.filter((q) => q.agentId === agentId).map((q) => q.request.nonce)
      expect([good.sub, good.iss, Object.keys(good.submods)]).toEqual([agentId, "default", ["tpm"]])
      expect(nonces).toContain(good.eat_nonce)
      expect(good.iat).toBeGreaterThanOrEqual(attested.last_successful_attestation ?? 0)
      expect(good.submods["tpm"]).toEqual({ "ear.status": "affirming", "ear.trustworthiness-vector": { "instance-identity": 2, executables: 2 } })

      // the same agent has no push attestations: the JSON:API answer and a numbered EAR stay 404
      expect((yield* get(`/v3.0/agents/${agentId}/attestations/latest`)).status).toBe(404)
      expect((yield* get(`/v3.0/agents/${agentId}/attestations/0`, EAR_MEDIA_TYPE)).status).toBe(404)
      expect((yield* get(`/v3.0/agents/ea400000-0000-0000-0000-00000000dead/attestations/latest`, EAR_MEDIA_TYPE)).status).toBe(404)

      // the machine runs an unlisted file: the verdict fails and the EAR follows it
      yield* machine.measure("/usr/bin/evil", "evil payload")
      yield* waitFor("INVALID_QUOTE", row, (r) => r.operational_state === 9)
      const token = yield* latestEar
      const bad = (yield* verifyEar(token, keys)).claims.submods["tpm"]!
      expect(bad).toEqual({
        "ear.status": "contraindicated",
        "ear.trustworthiness-vector": { "instance-identity": 2, executables: 33 },
        "ear.attest.failures": [{ type: "ima.validation.ima-ng.not_in_allowlist", message: "File not found in allowlist: /usr/bin/evil (entry 7)" }]
      })

      // every byte matters: one changed character of the claims fails the signature
      const [h, p, s] = token.split(".") as [string, string, string]
      const i = Math.floor(p.length / 2)
      const changed = `${h}.${p.slice(0, i)}${p[i] === "A" ? "B" : "A"}${p.slice(i + 1)}.${s}`
      const refused = yield* Effect.either(verifyEar(changed, keys))
      expect(Either.isLeft(refused) && ["signature", "malformed"].includes(refused.left.reason)).toBe(true)
    }), 180_000)
})
