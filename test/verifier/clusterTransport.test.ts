/**
 * Cluster mode's runners (issue 24): how they start together and who may speak on a runner port.
 *
 * - Schema changes at the same instant: attest's migrations and the engine's tables (the runner's
 *   own storages layer), each built twice at once on a fresh PostgreSQL database, all succeed. Before
 *   db/startLock.ts one of each pair failed (duplicate key in pg_type_typname_nsp_index) every time
 *   in process, and one runner in about four left at start.
 * - Two real `attest verifier` runners (`cluster = true`, the bundle) started at the same instant on
 *   a fresh database both start (test/verifier/cluster.test.ts's fleet starts its first two at the
 *   same instant too). On that pair, the runner port speaks mutual TLS
 *   only: a raw client's Ping (the engine's own msgpack frame) is answered with a Pong only when the
 *   client presents a runner's certificate (the CA's server certificate); without a certificate, with
 *   the admin's client certificate, with a server certificate of another CA or in plain TCP the
 *   connection is closed unanswered, and the runner says why. The engine's own client (Runners, as
 *   the runners' health checks use it) pings both runners over the same TLS transport, and neither
 *   runner distrusted the other. (The runners' work together, failover included, is
 *   test/verifier/cluster.test.ts's, which runs over this transport.)
 * - A server_cert that is not a server certificate is refused at start, naming the setting.
 */
import { MessageStorage, RunnerAddress, Runners, ShardingConfig } from "@effect/cluster"
import { RpcSerialization } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { readFileSync } from "node:fs"
import * as net from "node:net"
import { join } from "node:path"
import * as tls from "node:tls"
import { runMigrations } from "../../src/db/migrate.js"
import { SqlLive } from "../../src/db/Sql.js"
import { ServerTls } from "../../src/http/Tls.js"
import { clusterStorages } from "../../src/verifier/pull/cluster/runner.js"
import { RunnerTls } from "../../src/verifier/pull/cluster/RunnerTls.js"
import { tlsClientProtocol } from "../../src/verifier/pull/cluster/RunnerTransport.js"
import { makeTestCa, tempDir } from "../agent/support.js"
import { writeVerifierConfig } from "../faults/support.js"
import { startAttest } from "../support/attestProcess.js"
import { testDatabase } from "../support/db.js"
import { clusterDatabaseOptions } from "../support/clusterFleet.js"
import { needsPostgres } from "../support/requirements.js"
import { freePort } from "../support/swtpm.js"

const LISTENING = /attest verifier: API \(HTTPS, mTLS admin\) on (https:\/\/\S+)/
const SHARDS = 12
const pgOk = await needsPostgres()

/** Ports handed out in this file so far: two runners starting at once never get the same one. */
const handedOut = new Set<number>()
const freshPort = async () => {
  for (;;) {
    const port = await freePort()
    if (!handedOut.has(port)) return handedOut.add(port), port
  }
}

const pem = (dir: string, file: string) => readFileSync(join(dir, file), "utf8")

/** Two runners started at the same instant on a fresh database; both must say they listen. */
const twoRunnersAtOnce = (caDir: string, dir: string, round: number) =>
  Effect.gen(function*() {
    const db = yield* clusterDatabaseOptions // a database of its own: shard locks are per database
    const start = (name: string) =>
      Effect.gen(function*() {
        const runnerPort = yield* Effect.promise(freshPort)
        const config = writeVerifierConfig(dir, {
          caDir,
          db,
          port: 0,
          quoteInterval: 2,
          name: `${name}-${round}`,
          extra: ["cluster = true", `cluster_runner_port = ${runnerPort}`, `cluster_shards = ${SHARDS}`, "cluster_health_check_interval = 1"]
        })
        const run = startAttest(["verifier", "--config", config])
        yield* Effect.addFinalizer(() => Effect.promise(() => run.stop()))
        return { name, run, runnerPort }
      })
    const runners = yield* Effect.all([start("r1"), start("r2")], { concurrency: "unbounded" })
    const started = yield* Effect.forEach(runners, (r) =>
      Effect.promise(() =>
        r.run.waitFor(LISTENING, 120_000).then(
          () => ({ runner: r.name, started: true, output: "" }),
          // its last words arrive with its exit: read a moment later
          () => new Promise<{ runner: string; started: boolean; output: string }>((ok) => setTimeout(() => ok({ runner: r.name, started: false, output: r.run.output() }), 500))
        )
      ), { concurrency: "unbounded" })
    expect({ round, started }).toEqual({ round, started: runners.map((r) => ({ runner: r.name, started: true, output: "" })) })
    return { db, runners }
  })

interface Reply {
  /** Pong frames decoded from what the runner sent back. */
  readonly pongs: number
  /** The connection was closed (by the runner) within the bound. */
  readonly closed: boolean
}

const ping = RpcSerialization.msgPack.unsafeMake().encode({ _tag: "Ping" }) as Uint8Array

/** A raw client on the runner port: sends the engine's Ping frame once connected, reads until a Pong, until closed or until `ms` passed. */
const rawPing = (open: () => net.Socket, secure: boolean, ms = 8_000) =>
  Effect.async<Reply>((resume) => {
    const parser = RpcSerialization.msgPack.unsafeMake()
    let pongs = 0
    const socket = open()
    const done = (closed: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resume(Effect.succeed({ pongs, closed }))
    }
    const timer = setTimeout(() => done(false), ms)
    socket.on(secure ? "secureConnect" : "connect", () => socket.write(ping))
    socket.on("data", (chunk: Buffer) => {
      // a plain TCP client gets a TLS alert back, which is no frame
      if (!secure) return
      for (const m of parser.decode(new Uint8Array(chunk)) as Array<{ _tag: string }>) if (m._tag === "Pong") pongs++
      // answered: the connection was let through (closing it now is ours)
      if (pongs > 0) done(false)
    })
    socket.on("error", () => {})
    socket.on("close", () => done(true))
  })

const tlsTo = (port: number, ca: string, identity?: { readonly key: string; readonly cert: string }) => () =>
  tls.connect({ host: "127.0.0.1", port, ca, ...identity, checkServerIdentity: () => undefined })

describe.skipIf(!pgOk)("cluster runners on PostgreSQL: starting together, mutual TLS on the runner port", () => {
  it.live("schema changes made at the same instant by two processes all succeed (attest's migrations, the engine's tables; 3 fresh databases)", () =>
    Effect.gen(function*() {
      // before db/startLock.ts one of each pair failed every time: three rounds show it holds
      for (let round = 0; round < 3; round++) {
        const db = yield* testDatabase("pg")
        const sql = (name: string) => SqlLive(db, name)
        const tables = (name: string) =>
          Layer.build(clusterStorages.pipe(Layer.provide(ShardingConfig.layer({ shardsPerGroup: SHARDS })), Layer.provide(sql(name)))).pipe(Effect.scoped, Effect.asVoid, Effect.exit)
        const migrations = (name: string) => runMigrations.pipe(Effect.provide(sql(name)), Effect.asVoid, Effect.exit)
        const exits = yield* Effect.all([tables("a"), tables("b"), migrations("c"), migrations("d")], { concurrency: "unbounded" })
        expect({ round, failed: exits.filter((e: Exit.Exit<void, unknown>) => Exit.isFailure(e)).map(String) }).toEqual({ round, failed: [] })
      }
    }).pipe(Effect.scoped), 120_000)

  it.live("two runners started at the same instant both start, and their ports answer only runners' certificates", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-cluster-tls-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const other = yield* makeTestCa(join(dir, "other_ca"))
      const { runners } = yield* twoRunnersAtOnce(ca.dir, dir, 0)
      const runner = { key: pem(ca.dir, "server-private.pem"), cert: pem(ca.dir, "server-cert.crt") }

      // raw clients: only a runner's certificate gets the engine's Pong
      const port = runners[0]!.runnerPort
      const replies = {
        runnerCertificate: yield* rawPing(tlsTo(port, ca.caPem, runner), true, 30_000),
        noCertificate: yield* rawPing(tlsTo(port, ca.caPem), true),
        adminCertificate: yield* rawPing(tlsTo(port, ca.caPem, { key: ca.clientKey, cert: ca.clientCert }), true),
        otherCaServerCertificate: yield* rawPing(tlsTo(port, ca.caPem, { key: pem(other.dir, "server-private.pem"), cert: pem(other.dir, "server-cert.crt") }), true),
        plainTcp: yield* rawPing(() => net.connect({ host: "127.0.0.1", port }), false)
      }
      // the runner certificate's connection was answered and left open
      expect(replies).toEqual({
        runnerCertificate: { pongs: 1, closed: false },
        noCertificate: { pongs: 0, closed: true },
        adminCertificate: { pongs: 0, closed: true },
        otherCaServerCertificate: { pongs: 0, closed: true },
        plainTcp: { pongs: 0, closed: true }
      })
      const refusals = runners[0]!.run.lines.filter((l) => /refused a connection to the runner port/.test(l.text)).map((l) => l.text)
      expect({ refusals: refusals.length, say: refusals.join("\n") }).toMatchObject({ refusals: 3 })
      expect(refusals.join("\n")).toMatch(/not a server certificate/)

      // the engine's own client (Runners, as a runner's health check uses it) over the same TLS transport with a runner's identity
      const engine = Runners.layerRpc.pipe(
        Layer.provide(tlsClientProtocol),
        Layer.provide(MessageStorage.layerNoop),
        Layer.provide(ShardingConfig.layer({ shardsPerGroup: SHARDS, runnerAddress: Option.none() })),
        Layer.provide(RpcSerialization.layerMsgPack),
        Layer.provide(RunnerTls.fromServerTls),
        Layer.provide(ServerTls.fromPem({ ...runner, clientCa: ca.caPem }))
      )
      yield* Effect.gen(function*() {
        const runners_ = yield* Runners.Runners
        for (const r of runners) {
          const pinged = yield* Effect.exit(runners_.ping(RunnerAddress.make("127.0.0.1", r.runnerPort)).pipe(Effect.timeout("30 seconds")))
          expect({ runner: r.name, pinged: Exit.isSuccess(pinged) ? "pong" : String(pinged) }).toEqual({ runner: r.name, pinged: "pong" })
        }
      }).pipe(Effect.provide(engine))

      // no runner distrusted the other
      for (const r of runners) expect({ runner: r.name, distrust: r.run.output().match(/is not trusted: .*/g) ?? [] }).toEqual({ runner: r.name, distrust: [] })
    }).pipe(Effect.scoped), 600_000)
})

describe("cluster runners' TLS identity", () => {
  it.effect("a server_cert that is not a server certificate is refused at start, naming the setting", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("attest-cluster-tls-id-")
      const ca = yield* makeTestCa(join(dir, "cv_ca"))
      const refused = yield* Effect.flip(
        Layer.build(RunnerTls.fromServerTls.pipe(Layer.provide(ServerTls.fromPem({ key: ca.clientKey, cert: ca.clientCert, clientCa: ca.caPem })))).pipe(Effect.scoped)
      )
      expect(refused.message).toMatch(/^\[verifier\] cluster = true: server_cert cannot authenticate this runner .* trusted_client_ca: .*not a server certificate/)
      const ok = yield* Effect.exit(
        Layer.build(RunnerTls.fromServerTls.pipe(Layer.provide(ServerTls.fromPem({ key: pem(ca.dir, "server-private.pem"), cert: pem(ca.dir, "server-cert.crt"), clientCa: ca.caPem })))).pipe(Effect.scoped)
      )
      expect(Exit.isSuccess(ok)).toEqual(true)
    }).pipe(Effect.scoped), 60_000)
})
