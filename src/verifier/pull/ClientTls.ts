/**
 * The verifier's TLS identity towards agents: the client certificate and key it presents
 * (`client_cert`, `client_key` in the TLS directory, Keylime's cv_ca layout) and, when `agent_ca`
 * is configured, the CAs that sign agents' certificates. Without `agent_ca` each request trusts
 * exactly that agent's `mtls_cert` (AgentClient.ts). `enable_agent_mtls = false` talks plain HTTP.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Context, Effect, Layer } from "effect"
import type { VerifierOptions } from "../../config/sections.js"
import { CaError } from "../../pki/files.js"
import { resolveClientTls } from "../../pki/tlsDir.js"

export interface VerifierClientTlsShape {
  /** PEM of the client certificate and key; undefined when agent mTLS is off. */
  readonly cert: string | undefined
  readonly key: string | undefined
  /** PEM bundle of `agent_ca`; undefined: trust exactly each agent's mtls_cert. */
  readonly agentCa: string | undefined
  /** `enable_agent_mtls`: HTTPS with client certificates, or plain HTTP. */
  readonly mtls: boolean
}

export class VerifierClientTls extends Context.Tag("attest/verifier/VerifierClientTls")<VerifierClientTls, VerifierClientTlsShape>() {
  /** From the `[verifier]` section: tls_dir (generate|default|path), client_cert, client_key, agent_ca. */
  static readonly fromSection = (c: VerifierOptions): Layer.Layer<VerifierClientTls, CaError> =>
    Layer.effect(VerifierClientTls, clientTlsOfSection(c))

  /** From PEM in memory (tests, benchmarks, embedding). */
  static readonly fromPem = (o: { readonly cert: string; readonly key: string; readonly agentCa?: string }): Layer.Layer<VerifierClientTls> =>
    Layer.succeed(VerifierClientTls, { cert: o.cert, key: o.key, agentCa: o.agentCa, mtls: true })
}

export const clientTlsOfSection = (c: VerifierOptions): Effect.Effect<VerifierClientTlsShape, CaError> =>
  Effect.gen(function*() {
    if (!c.enable_agent_mtls) return { cert: undefined, key: undefined, agentCa: undefined, mtls: false }
    const material = yield* resolveClientTls({
      tlsDir: c.tls_dir,
      clientKey: c.client_key,
      clientCert: c.client_cert,
      trustedServerCa: c.trusted_server_ca,
      caDir: c.ca_dir
    })
    const base = c.tls_dir === "generate" || c.tls_dir === "default" || c.tls_dir === "" ? c.ca_dir : c.tls_dir
    const agentCa = c.agent_ca.length === 0 ? undefined : yield* Effect.forEach(c.agent_ca, (f) => {
      const file = path.isAbsolute(f) ? f : path.join(base, f)
      return Effect.try({
        try: () => fs.readFileSync(file, "utf8"),
        catch: (e) => new CaError({ message: `[verifier] agent_ca ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`, file })
      })
    }).pipe(Effect.map((pems) => pems.join("\n")))
    return { cert: material.cert, key: material.key, agentCa, mtls: true }
  })
