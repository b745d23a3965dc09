/**
 * A revocation reaches a running registrar without a restart (issue 8, item 4): the registrar is
 * started from its config section (tls_dir = the CA directory, crl_refresh_interval one hour, so
 * only the file watch can be what applies it); `revokeAdmin` rewrites the CRL file and the revoked
 * admin is refused within a generous bound, while another admin of the same CA keeps working.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { sectionDefaults } from "../../src/config/load.js"
import { registrarSection } from "../../src/config/sections.js"
import { type ClientTls, rawRequest } from "../../src/http/client.js"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { issueAdmin } from "../../src/pki/ca.js"
import { revokeAdmin } from "../../src/pki/revoke.js"
import { RegistrarFromConfig } from "../../src/registrar/fromConfig.js"
import { makeTestPki, removePki } from "./harness.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const admin = (name: string): ClientTls => {
  Effect.runSync(Effect.orDie(issueAdmin(pki.dir, name)))
  return { ca: pki.caPem, cert: readFileSync(join(pki.dir, `${name}-cert.crt`), "utf8"), key: readFileSync(join(pki.dir, `${name}-private.pem`), "utf8") }
}

describe("registrar with a live admin CRL", () => {
  it.live("refuses an admin revoked while it runs, without a restart; another admin keeps working", () =>
    Effect.gen(function*() {
      const alice = admin("live-alice")
      const bob = admin("live-bob")
      const work = mkdtempSync(join(tmpdir(), "attest-reg-crl-live-"))
      const section = sectionDefaults(registrarSection, {
        ip: "127.0.0.1",
        port: 0,
        tls_port: 0,
        tls_dir: pki.dir,
        data_dir: work,
        ek_ca_dir: join(work, "tpm_cert_store"),
        crl_refresh_interval: 3600,
        metrics_port: 0
      })
      const ctx = yield* Layer.build(RegistrarFromConfig(section))
      const url = Context.get(ctx, BoundListeners).get("registrar-https")!.url
      const list = (tls: ClientTls) =>
        rawRequest({ method: "GET", baseUrl: url, path: "/v2.6/agents", tls }).pipe(Effect.map((r) => r.status), Effect.orDie)
      expect([yield* list(alice), yield* list(bob)]).toEqual([200, 200])

      yield* Effect.orDie(revokeAdmin({ dir: pki.dir, name: "live-alice" }))
      const started = Date.now()
      let status = 200
      while (status === 200 && Date.now() - started < 30_000) {
        yield* Effect.sleep("100 millis")
        status = yield* list(alice)
      }
      expect(status).toBe(403)
      expect(yield* list(bob)).toBe(200)
    }).pipe(Effect.scoped), 90_000)
})
