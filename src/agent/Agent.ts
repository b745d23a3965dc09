/**
 * The pull agent at start (spec §4.3, DESIGN "Data flow: pull model"): read EK and EK certificate,
 * load or create the AK and the NK (both kept in the data dir), reset PCR 16 and extend the NK's digest into it,
 * listen on HTTPS with client certificates from the trusted CA required at the handshake (as
 * rust-keylime, which refuses the TLS connection), register and activate with the registrar
 * (retrying while it is unreachable), then serve until the scope closes.
 */
import type { HttpClient } from "@effect/platform"
import { createHash } from "node:crypto"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, Option } from "effect"
import { nodeServer } from "../http/HttpServers.js"
import { serveNode } from "../http/listen.js"
import { ListenerTimeouts } from "../http/timeouts.js"
import type { AkOptions, KeyAlg } from "../tpm/Tpm.js"
import { Tpm } from "../tpm/Tpm.js"
import { BootstrapKeys, make as makeKeys } from "./BootstrapKeys.js"
import { AGENT_API_VERSIONS, makeAgentApp } from "./Http.js"
import { AgentIdentity, type AgentIdentityShape } from "./Identity.js"
import { MeasurementSource } from "./measurements/MeasurementSource.js"
import type { PayloadOptions } from "./payload.js"
import { loadOrCreateNk } from "./nkStore.js"
import { DATA_PCR, make as makeQuotes, Quotes } from "./Quotes.js"
import { register, type RetryPolicy } from "./Registration.js"
import { establishTpmIdentity } from "./tpmIdentity.js"
import { loadOrCreateServerTls, type ServerTls } from "./tls.js"

export interface AgentOptions {
  /** A UUID, or "hash_ek" for the SHA-256 of the EK public area (hex). */
  readonly agentId: string
  readonly dataDir: string
  readonly host: string
  /** 0 picks a free port (tests, `attest up`). */
  readonly port: number
  /** Address and port announced to the registrar; default: host and the bound port. */
  readonly contactIp?: string
  readonly contactPort?: number
  /** Base URL of the registrar's registration port, e.g. http://127.0.0.1:8890; unset: no registration. */
  readonly registrarUrl?: string | undefined
  /** PEM of the CA whose client certificates may connect (the server components CA). */
  readonly trustedClientCa: string
  /** Given certificate and key; unset: self-signed (or issued by `serverCertIssuer`) and stored in the data dir. */
  readonly serverTls?: ServerTls
  readonly serverCertIssuer?: { readonly certificatePem: string; readonly privateKeyPem: string }
  readonly payload: PayloadOptions
  readonly revocationCert?: string | undefined
  readonly revocationCertFile?: string | undefined
  readonly ekAlg?: KeyAlg
  readonly ak?: AkOptions
  readonly retry?: RetryPolicy
  readonly versions?: ReadonlyArray<string>
  /** Largest request body; default DEFAULT_MAX_BODY_BYTES (1 MiB), as the registrar. */
  readonly maxBodyBytes?: number
}

export interface RunningAgentShape {
  readonly agentId: string
  readonly url: string
  readonly port: number
  readonly serverCert: string
  /** TPM2B_PUBLIC of the AK (what the registrar records as aik_tpm). */
  readonly akPublic: Uint8Array
  /** The API version the registration used; None when no registrar is configured. */
  readonly registeredWith: Option.Option<string>
}

export class RunningAgent extends Context.Tag("attest/agent/RunningAgent")<RunningAgent, RunningAgentShape>() {}

const defaultAk: AkOptions = { alg: "rsa", bits: 2048, hash: "sha256", scheme: "rsassa" }

const start = (o: AgentOptions) =>
  Effect.gen(function*() {
    const tpm = yield* Tpm
    const source = yield* MeasurementSource
    const ekAlg = o.ekAlg ?? "rsa"
    const akOptions = o.ak ?? defaultAk
    const { agentId, ekPublic, ekCertificate, ak } = yield* establishTpmIdentity({ agentId: o.agentId, dataDir: o.dataDir, ekAlg, ak: akOptions })
    // every line about this agent, at start and while serving, carries its id (several agents share
    // one process under `attest up`)
    return yield* Effect.gen(function*() {
      yield* Effect.logInfo(`agent starting: TPM ${tpm.description}, measurements from ${source.description}`)
      // the NK survives restarts too: a verifier holding it keeps matching PCR 16 (Keylime asks for partial quotes)
      const nk = yield* loadOrCreateNk(o.dataDir)
      const keys = yield* makeKeys({ agentId, payload: o.payload, nk })
      // PCR 16 = H(0 ‖ H(NK PEM)) binds the NK to every quote (Keylime `TPM_DATA_PCR`). It is reset
      // first (a debug PCR, resettable at locality 0): after an agent restart without a TPM reset it
      // still holds the previous NK's extension, and quotes would not bind this NK.
      const hash = ak.options.hash
      yield* tpm.pcrReset(DATA_PCR)
      yield* tpm.pcrExtend(DATA_PCR, [{ hash, digest: new Uint8Array(createHash(hash).update(keys.nk.publicPem).digest()) }])
      yield* Effect.logInfo(`reset PCR ${DATA_PCR} and extended H(NK public key PEM) into its ${hash} bank`)

      const identity: AgentIdentityShape = {
        agentId,
        ak,
        ekAlg,
        hashAlg: hash,
        encAlg: ak.options.alg,
        encBits: ak.options.bits ?? (ak.options.alg === "rsa" ? 2048 : 256),
        signAlg: ak.options.scheme
      }
      const ctx = Context.make(AgentIdentity, identity).pipe(Context.add(BootstrapKeys, keys), Context.add(Tpm, tpm), Context.add(MeasurementSource, source))
      const quotes = yield* makeQuotes.pipe(Effect.provide(ctx))
      const versions = o.versions ?? AGENT_API_VERSIONS
      const app = yield* makeAgentApp({
        versions,
        revocationCert: o.revocationCert,
        revocationCertFile: o.revocationCertFile,
        ...(o.maxBodyBytes === undefined ? {} : { maxBodyBytes: o.maxBodyBytes })
      }).pipe(
        Effect.provide(Context.add(ctx, Quotes, quotes))
      )

      const contactIp = o.contactIp ?? (o.host === "0.0.0.0" || o.host === "::" ? "127.0.0.1" : o.host)
      const tls = o.serverTls ?? (yield* loadOrCreateServerTls({
        dataDir: o.dataDir,
        agentId,
        names: [...new Set([contactIp, "127.0.0.1", "localhost"])],
        ...(o.serverCertIssuer ? { issuer: o.serverCertIssuer } : {})
      }))
      // rust-keylime refuses a client without a certificate from the trusted CA at the handshake
      // a slow client is cut off as on every listener; keep-alive is long: the verifier's quote requests reuse it
      const node = nodeServer({
        tls: { key: tls.key, cert: tls.cert, clientCa: o.trustedClientCa, requireClientCertificate: true },
        timeouts: yield* ListenerTimeouts,
        keepAliveTimeoutMs: 30_000
      })
      const server = yield* serveNode("agent", node, { host: o.host, port: o.port })
      yield* server.serve(Effect.annotateLogs(app, "agent_id", agentId))
      const port = (node.address() as AddressInfo).port
      const url = `https://${contactIp.includes(":") ? `[${contactIp}]` : contactIp}:${port}`
      yield* Effect.logInfo(`agent ${agentId} listening on https://${o.host}:${port} (client certificates from the trusted CA required)`)

      if (o.registrarUrl === undefined) {
        yield* Effect.logWarning("no registrar configured: the agent serves without registering")
        return RunningAgent.of({ agentId, url, port, serverCert: tls.cert, akPublic: ak.public, registeredWith: Option.none() })
      }
      const registeredWith = yield* register({
        registrarUrl: o.registrarUrl,
        agentId,
        ekPublic,
        ekCertificate,
        ak,
        mtlsCert: tls.cert,
        contactIp,
        contactPort: o.contactPort ?? port,
        versions
      }, o.retry)
      return RunningAgent.of({ agentId, url, port, serverCert: tls.cert, akPublic: ak.public, registeredWith: Option.some(registeredWith) })
    }).pipe(Effect.annotateLogs("agent_id", agentId))
  }).pipe(Effect.withLogSpan("agent"))

/** The running agent: needs a Tpm, a MeasurementSource and an HttpClient (for the registrar). */
export const layer = (o: AgentOptions) => Layer.scoped(RunningAgent, start(o))

export type AgentRequirements = Tpm | MeasurementSource | HttpClient.HttpClient
