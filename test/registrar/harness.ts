/**
 * A registrar under test: a throw-away server components CA (pki initCa) in a temp dir, extra client
 * certificates for the authorization matrix, SQLite in a temp file (or PostgreSQL), both listeners
 * on free ports, and a raw client that talks to either.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Either, Layer, Option, Redacted } from "effect"
import * as crypto from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runMigrations } from "../../src/db/migrate.js"
import { type ClientTls, rawRequest, type RawResponse } from "../../src/http/client.js"
import { BoundListeners } from "../../src/http/HttpServers.js"
import { CA_FILES, initCa } from "../../src/pki/ca.js"
import { EKU, generateKeyPair, issueCertificate, privateKeyToPem, toPem } from "../../src/pki/certificate.js"
import { type TrustStore } from "../../src/pki/chain.js"
import type { TpmIdentityPolicy } from "../../src/registrar/registration.js"
import type { RevocationSource } from "../../src/pki/liveRevocations.js"
import { RegistrarServerLive } from "../../src/registrar/Server.js"
import { AdminIdentityLive, ServerTls } from "../../src/http/Tls.js"
import { decodeCredentialFile } from "../../src/tpm/credential.js"
import type { TpmShape } from "../../src/tpm/Tpm.js"
import { vectorPath } from "../support/vectors.js"

export interface TestPki {
  readonly dir: string
  readonly caPem: string
  readonly serverKey: string
  readonly serverCert: string
  /** Client identities for the authorization matrix. */
  readonly clients: {
    readonly admin: ClientTls
    readonly none: ClientTls
    readonly foreign: ClientTls
    readonly expired: ClientTls
    readonly noClientAuth: ClientTls
  }
}

const DAY = 86_400_000

/** A CA directory like `tls_dir = generate` makes, plus an expired and a server-EKU-only client cert. */
export const makeTestPki = (): TestPki => {
  const dir = mkdtempSync(join(tmpdir(), "attest-reg-pki-"))
  Effect.runSync(Effect.orDie(initCa({ dir })))
  const read = (f: string) => readFileSync(join(dir, f), "utf8")
  const caPem = read(CA_FILES.caCert)
  const caKey = crypto.createPrivateKey(read(CA_FILES.caKey))
  const caDer = new Uint8Array(new crypto.X509Certificate(caPem).raw)
  const issue = (cn: string, notBefore: Date, notAfter: Date, eku: ReadonlyArray<string>): ClientTls => {
    const keys = generateKeyPair("ec-p256")
    const der = Either.getOrThrow(issueCertificate({
      subject: { CN: cn },
      publicKey: keys.publicKey,
      issuer: { certificate: caDer, privateKey: caKey },
      notBefore,
      notAfter,
      basicConstraints: { ca: false },
      keyUsage: ["digitalSignature"],
      extendedKeyUsage: eku
    }))
    return { ca: caPem, cert: toPem(der), key: privateKeyToPem(keys.privateKey) }
  }
  const now = Date.now()
  return {
    dir,
    caPem,
    serverKey: read(CA_FILES.serverKey),
    serverCert: read(CA_FILES.serverCert),
    clients: {
      admin: { ca: caPem, cert: read(CA_FILES.clientCert), key: read(CA_FILES.clientKey) },
      none: { ca: caPem },
      foreign: {
        ca: caPem,
        cert: readFileSync(vectorPath("keylime-wire", "inputs", "foreign-client.crt"), "utf8"),
        key: readFileSync(vectorPath("keylime-wire", "inputs", "foreign-client.key"), "utf8")
      },
      expired: issue("expired-admin", new Date(now - 30 * DAY), new Date(now - DAY), [EKU.clientAuth]),
      noClientAuth: issue("server-only", new Date(now - DAY), new Date(now + 30 * DAY), [EKU.serverAuth])
    }
  }
}

export const removePki = (pki: TestPki) => rmSync(pki.dir, { recursive: true, force: true })

/** SQLite file under a temp dir (kept across a restart when the same file is given). */
export const sqliteLayer = (filename: string): Layer.Layer<SqlClient.SqlClient> =>
  Layer.effectDiscard(runMigrations).pipe(
    Layer.provideMerge(SqliteClient.layer({ filename })),
    Layer.orDie
  )

/** PostgreSQL in its own schema (search_path per connection), so reruns and other suites do not collide. */
export const pgLayer = (url: string, schema: string): Layer.Layer<SqlClient.SqlClient> => {
  const u = new URL(url)
  u.searchParams.set("options", `-c search_path=${schema}`)
  return Layer.effectDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE SCHEMA IF NOT EXISTS ${schema}`)).pipe(
      Effect.zipRight(runMigrations)
    )
  ).pipe(
    Layer.provideMerge(PgClient.layer({ url: Redacted.make(u.toString()), })),
    Layer.orDie
  )
}

/** Drops a suite's PostgreSQL schema (a fresh database for the next run). */
export const dropPgSchema = (url: string, schema: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url) })),
    Effect.orDie
  )

export interface RegistrarUnderTest {
  readonly httpUrl: string
  readonly httpsUrl: string
}
export class TestRegistrar extends Context.Tag("test/TestRegistrar")<TestRegistrar, RegistrarUnderTest>() {}

/** ServerTls (the test CA's server certificate, its CA as trusted client CA) and the admin identity. */
export const testServerTls = (pki: TestPki, revocations?: RevocationSource) =>
  AdminIdentityLive.pipe(
    Layer.provideMerge(ServerTls.fromPem({
      key: pki.serverKey,
      cert: pki.serverCert,
      clientCa: pki.caPem,
      ...(revocations === undefined ? {} : { revocations })
    }))
  )

export interface TestRegistrarOptions {
  readonly pki: TestPki
  readonly ekTrustStore: TrustStore
  readonly tpmIdentity?: TpmIdentityPolicy
  readonly maxBodyBytes?: number
}

/** Both listeners on free loopback ports over the given database layer. */
export const testRegistrarLayer = (
  options: TestRegistrarOptions,
  db: Layer.Layer<SqlClient.SqlClient>
): Layer.Layer<TestRegistrar> =>
  Layer.effect(
    TestRegistrar,
    Effect.map(BoundListeners, (bound) => ({
      httpUrl: bound.get("registrar-http")!.url,
      httpsUrl: bound.get("registrar-https")!.url
    }))
  ).pipe(
    Layer.provide(RegistrarServerLive({
      host: "127.0.0.1",
      port: 0,
      tlsPort: 0,
      ekTrustStore: options.ekTrustStore,
      tpmIdentity: options.tpmIdentity ?? "default",
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes })
    })),
    Layer.provide(testServerTls(options.pki)),
    Layer.provide(db),
    Layer.orDie
  )

export type Port = "http" | "https"
export type Who = keyof TestPki["clients"]

export interface Call {
  readonly method: string
  readonly path: string
  readonly port: Port
  readonly who?: Who
  readonly json?: unknown
  readonly body?: string
  /** Content-Type of a `json` or `body` request (default application/json). */
  readonly contentType?: string
}

export interface Parsed extends RawResponse {
  readonly json: unknown
}

/** One request to the registrar under test; the body is parsed when it is JSON. */
export const call = (pki: TestPki, reg: RegistrarUnderTest, c: Call): Effect.Effect<Parsed> =>
  rawRequest({
    method: c.method,
    baseUrl: c.port === "http" ? reg.httpUrl : reg.httpsUrl,
    path: c.path,
    ...(c.json !== undefined
      ? { body: JSON.stringify(c.json), headers: { "content-type": c.contentType ?? "application/json" } }
      : c.body !== undefined
      ? { body: c.body, headers: { "content-type": c.contentType ?? "application/json" } }
      : {}),
    ...(c.port === "https" ? { tls: pki.clients[c.who ?? "admin"] } : {})
  }).pipe(
    Effect.map((r) => {
      let json: unknown = undefined
      try {
        json = r.body.length > 0 ? JSON.parse(r.body) : undefined
      } catch {
        json = undefined
      }
      return { ...r, json }
    }),
    Effect.orDie
  )

/** Rows in the registrar table, to show a refused request stored nothing. */
export const countRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM registrar_agents`
  return Number(rows[0]?.n ?? 0)
}).pipe(Effect.orDie)

/** A registration body from a TPM: its EK certificate (if any), EK and a fresh RSA AK. */
export const agentBody = (tpm: TpmShape, withCert = true) =>
  Effect.gen(function*() {
    const ekCert = withCert ? Option.getOrUndefined(yield* tpm.ekCertificate("rsa")) : undefined
    const ekPublic = yield* tpm.ekPublic("rsa")
    const ak = yield* tpm.createAk("rsa", { alg: "rsa", hash: "sha256", scheme: "rsassa" })
    const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64")
    const body = {
      ...(ekCert === undefined ? { ek_tpm: b64(ekPublic) } : { ekcert: b64(ekCert) }),
      aik_tpm: b64(ak.public),
      mtls_cert: "disabled",
      ip: "127.0.0.1",
      port: 9002
    }
    return { ak, ekPublic, ekCert, body }
  }).pipe(Effect.orDie)

/** HMAC-SHA384 with the base64 text of the secret as key, over the agent id (keylime-wire.md §5). */
export const authTagFor = (secret: Uint8Array, agentId: string): string =>
  crypto.createHmac("sha384", Buffer.from(Buffer.from(secret).toString("base64"), "utf8")).update(agentId).digest("hex")

/** Register + activate with the TPM: the whole agent side of credential activation. */
export const registerAndActivate = (
  pki: TestPki,
  reg: RegistrarUnderTest,
  tpm: TpmShape,
  agentId: string,
  existing?: Effect.Effect.Success<ReturnType<typeof agentBody>>
) =>
  Effect.gen(function*() {
    const agent = existing ?? (yield* agentBody(tpm))
    const registered = yield* call(pki, reg, { method: "POST", path: `/v2.6/agents/${agentId}`, port: "http", json: agent.body })
    if (registered.status !== 200) return yield* Effect.dieMessage(`register failed: ${registered.body}`)
    const blob = decodeCredentialFile(new Uint8Array(Buffer.from((registered.json as { results: { blob: string } }).results.blob, "base64")))
    if (Either.isLeft(blob)) return yield* Effect.dieMessage(blob.left.message)
    const secret = yield* Effect.orDie(tpm.activateCredential(agent.ak, blob.right))
    const activated = yield* call(pki, reg, {
      method: "PUT",
      path: `/v2.6/agents/${agentId}/activate`,
      port: "http",
      json: { auth_tag: authTagFor(secret, agentId) }
    })
    if (activated.status !== 200) return yield* Effect.dieMessage(`activate failed: ${activated.body}`)
    return agent
  })
