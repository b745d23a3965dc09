/**
 * The shared server layers as the verifier will use them: a small admin API served by
 * `HttpServers.layer` with `ServerTlsWithAdmins("verifier", section)` from the `[verifier]` section
 * defaults (tls_dir = generate in a fresh ca_dir, port 0). The CA is generated, the admin
 * certificate it issued is let in, a caller without one is refused, the TLS policy applies, and an
 * admin revoked while it runs is refused without a restart.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BadRequestE, Envelope, ForbiddenE } from "../../schemas/Envelope.js"
import { BoundListeners, HttpServers } from "../../src/http/HttpServers.js"
import { ServerTlsWithAdmins } from "../../src/http/Tls.js"
import { sectionDefaults } from "../../src/config/load.js"
import { verifierSection } from "../../src/config/sections.js"
import { authorize, AuthorizationProviderLive } from "../../src/http/authorization.js"
import { type ClientTls, rawRequest } from "../../src/http/client.js"
import { V2_VERSIONS } from "../../src/http/versions.js"
import { CA_FILES } from "../../src/pki/ca.js"
import { revokeAdmin } from "../../src/pki/revoke.js"
import { tlsHandshake } from "../support/probes.js"

class Agents extends HttpApiGroup.make("agents")
  .add(HttpApiEndpoint.get("list", "/agents").addSuccess(Envelope(Schema.Struct({ uuids: Schema.Array(Schema.String) }))))
  .addError(BadRequestE)
  .addError(ForbiddenE)
{}
class ToyVerifierApi extends HttpApi.make("toy-verifier").add(Agents) {}
const handlers = HttpApiBuilder.group(ToyVerifierApi, "agents", (h) =>
  h.handle("list", () => authorize("list_agents", "admin").pipe(Effect.as({ uuids: ["a"] }))))

describe("shared server layers", () => {
  it.live("serve a second HTTPS API from the [verifier] section in a few lines", () =>
    Effect.gen(function*() {
      const work = mkdtempSync(join(tmpdir(), "attest-server-layers-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
      const caDir = join(work, "cv_ca")
      const section = sectionDefaults(verifierSection, { ca_dir: caDir, port: 0 })
      expect(section.tls_dir).toBe("generate")

      // what VerifierServerLive will be
      const server = HttpServers.layer({
        versions: V2_VERSIONS,
        unversioned: [],
        listeners: [{ name: "verifier", host: section.ip, port: section.port, tls: true }]
      }).pipe(
        Layer.provide(HttpApiBuilder.api(ToyVerifierApi).pipe(Layer.provide(handlers))),
        Layer.provide(ServerTlsWithAdmins("verifier", section)),
        Layer.provide(AuthorizationProviderLive(section.authorization_provider))
      )
      const url = Context.get(yield* Layer.build(server), BoundListeners).get("verifier")!.url

      const ca = readFileSync(join(caDir, CA_FILES.caCert), "utf8")
      const admin: ClientTls = { ca, cert: readFileSync(join(caDir, CA_FILES.clientCert), "utf8"), key: readFileSync(join(caDir, CA_FILES.clientKey), "utf8") }
      const list = (tls: ClientTls) =>
        rawRequest({ method: "GET", baseUrl: url, path: "/v2.6/agents", tls }).pipe(
          Effect.map((r) => ({ status: r.status, json: JSON.parse(r.body) as unknown })),
          Effect.orDie
        )
      expect(yield* list(admin)).toEqual({ status: 200, json: { code: 200, status: "Success", results: { uuids: ["a"] } } })
      expect(yield* list({ ca })).toEqual({
        status: 403,
        json: { code: 403, status: "Action requires admin authentication (mTLS certificate)", results: {} }
      })
      expect(yield* Effect.promise(() => tlsHandshake(url, { ciphers: "AES128-SHA", tls12Only: true }))).toMatchObject({ ok: false })

      // the generated CA's CRL is live: revoking the admin takes effect while the server runs
      yield* Effect.orDie(revokeAdmin({ dir: caDir, serial: new crypto.X509Certificate(admin.cert!).serialNumber }))
      const started = Date.now()
      let status = 200
      while (status === 200 && Date.now() - started < 30_000) {
        yield* Effect.sleep("100 millis")
        status = (yield* list(admin)).status
      }
      expect(status).toBe(403)
    }).pipe(Effect.scoped), 90_000)
})
