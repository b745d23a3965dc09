/**
 * `attest tenant reglist | regstatus | regdelete` against a real registrar over HTTPS with the test
 * CA's admin certificate: an activated agent, one registered but never activated, deletion, and the
 * errors a user meets (unknown agent, registrar down, a client certificate of another CA).
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { simulatorManufacturerCa, TpmSimulator } from "../../src/tpm/simulator/TpmSimulator.js"
import { trustStoreOf } from "../../src/pki/chain.js"
import { regdelete, reglist, regstatus } from "../../src/tenant/registrarCommands.js"
import { Tpm } from "../../src/tpm/Tpm.js"
import { agentBody, call, makeTestPki, registerAndActivate, removePki, sqliteLayer, TestRegistrar, testRegistrarLayer } from "../registrar/harness.js"
import { vectorPath } from "../support/vectors.js"
import { captureOutput, tenantConnections } from "./support.js"

const pki = makeTestPki()
afterAll(() => removePki(pki))
const ekTrust = trustStoreOf([new crypto.X509Certificate(simulatorManufacturerCa().pem)], "simulator CA")
const db = sqliteLayer(join(mkdtempSync(join(tmpdir(), "attest-tenant-reg-")), "registrar.sqlite"))
const env = Layer.mergeAll(testRegistrarLayer({ pki, ekTrustStore: ekTrust }, db), TpmSimulator.layer({ seed: "tenant-reg" }))

const ACTIVE = "7b0c4b8e-0000-4000-8000-00000000c001"
const PENDING = "7b0c4b8e-0000-4000-8000-00000000c002"

describe("tenant registrar commands", () => {
  layer(env, { timeout: 120_000, excludeTestServices: true })((it) => {
    it.scoped("list, status and delete over mTLS; an agent never activated is listed as not active", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const tpm = yield* Tpm
        yield* registerAndActivate(pki, reg, tpm, ACTIVE)
        const pending = yield* agentBody(tpm)
        const posted = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${PENDING}`, port: "http", json: pending.body })
        expect(posted.status).toEqual(200)

        const c = yield* tenantConnections({ caDir: pki.dir, registrar: reg.httpsUrl })
        const o = captureOutput()
        yield* reglist(c, o.out)
        expect(o.last().value).toEqual({
          uuids: [ACTIVE, PENDING],
          agents: [
            { agent_id: ACTIVE, active: true, ip: "127.0.0.1", port: 9002, regcount: 1 },
            { agent_id: PENDING, active: false }
          ]
        })
        expect(o.last().text.split("\n")).toEqual([
          "agent                                 active  address         registrations",
          `${ACTIVE}  yes     127.0.0.1:9002  1`,
          `${PENDING}  no      -               -`
        ])
        expect((yield* c.registrar).version).toEqual("2.6")

        yield* regstatus(c, o.out, ACTIVE)
        expect((o.last().value as { agent_id: string }).agent_id).toEqual(ACTIVE)
        expect(o.last().text).toContain("EK certificate:")
        expect(o.last().text).toContain("address:           127.0.0.1:9002")

        const missing = yield* Effect.either(regstatus(c, o.out, "no-such-agent"))
        expect(Either.isLeft(missing) && missing.left.message).toEqual(
          "registrar record of agent no-such-agent: the registrar answered 404: Agent with ID 'no-such-agent' not found"
        )

        yield* regdelete(c, o.out, ACTIVE)
        expect(o.last().text).toEqual(`agent ${ACTIVE} deleted from the registrar`)
        yield* reglist(c, o.out)
        expect((o.last().value as { uuids: Array<string> }).uuids).toEqual([PENDING])
      }))

    it.scoped("a registrar that is down and a client certificate from another CA are one-line errors", () =>
      Effect.gen(function*() {
        const reg = yield* TestRegistrar
        const o = captureOutput()
        // a port nothing listens on: bind one, then close it
        const down = yield* Effect.promise(() =>
          new Promise<number>((resolve) => {
            const s = net.createServer()
            s.listen(0, "127.0.0.1", () => {
              const port = (s.address() as net.AddressInfo).port
              s.close(() => resolve(port))
            })
          })
        )
        const c1 = yield* tenantConnections({ caDir: pki.dir, registrar: `https://127.0.0.1:${down}` })
        const refused = yield* Effect.either(reglist(c1, o.out))
        expect(Either.isLeft(refused) && refused.left.message).toEqual(
          `GET https://127.0.0.1:${down}/version: cannot reach the registrar at https://127.0.0.1:${down}: connection refused (is it running?)`
        )

        // a tenant directory whose client certificate comes from a CA the registrar does not trust
        const foreign = mkdtempSync(join(tmpdir(), "attest-tenant-foreign-"))
        writeFileSync(join(foreign, "cacert.crt"), pki.caPem)
        writeFileSync(join(foreign, "client-cert.crt"), readFileSync(vectorPath("keylime-wire", "inputs", "foreign-client.crt")))
        writeFileSync(join(foreign, "client-private.pem"), readFileSync(vectorPath("keylime-wire", "inputs", "foreign-client.key")))
        const c2 = yield* tenantConnections({ caDir: foreign, registrar: reg.httpsUrl })
        const refusedCert = yield* Effect.either(reglist(c2, o.out))
        expect(Either.isLeft(refusedCert) && refusedCert.left.message).toMatch(
          /^list agents: the registrar answered 403: .*|^list agents: the registrar refused the tenant's client certificate/
        )

        // a tenant that trusts another CA than the one that issued the registrar's certificate
        const otherCa = mkdtempSync(join(tmpdir(), "attest-tenant-otherca-"))
        const { initCa } = yield* Effect.promise(() => import("../../src/pki/ca.js"))
        yield* Effect.orDie(initCa({ dir: otherCa }))
        const c3 = yield* tenantConnections({ caDir: otherCa, registrar: reg.httpsUrl })
        const untrusted = yield* Effect.either(reglist(c3, o.out))
        expect(Either.isLeft(untrusted) && untrusted.left.message).toMatch(
          new RegExp(`^GET ${reg.httpsUrl}/version: TLS with the registrar at ${reg.httpsUrl} failed \\([A-Z_]+\\); check \\[tenant\\] client_cert, client_key and trusted_server_ca against the registrar's CA$`)
        )
      }))
  })
})
