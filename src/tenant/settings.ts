/**
 * The tenant's settings: the `[tenant]` section (environment `ATTEST_TENANT_*` over the `--config`
 * file over defaults) with the command line's `--verifier` / `--registrar` over its addresses, and
 * the client TLS material it names (`tls_dir = default`: the CA directory's client-cert.crt,
 * client-private.pem and cacert.crt, spec §5.5).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Option } from "effect"
import { CA_FILES } from "../pki/ca.js"
import { ConfigSources, resolveFromSources } from "../config/services.js"
import { sectionDefaults } from "../config/load.js"
import { type TenantOptions, tenantSection } from "../config/sections.js"
import type { ClientTls } from "../http/client.js"
import { resolveClientTls } from "../pki/tlsDir.js"
import { TenantError } from "./errors.js"

export interface TenantFlags {
  readonly config: Option.Option<string>
  readonly verifier: Option.Option<string>
  readonly registrar: Option.Option<string>
}

export interface TenantSettings {
  readonly verifierUrl: string
  readonly registrarUrl: string
  /** Client certificate and key presented to every server, and the CAs trusted for verifier and registrar. */
  readonly tls: ClientTls
  readonly options: TenantOptions
}

const host = (ip: string) => (ip.includes(":") ? `[${ip}]` : ip)

/** `https://host:port`, from a flag (a bare `host:port` gets https://) with its trailing slashes cut. */
export const normalizeUrl = (flag: string, what: string): Effect.Effect<string, TenantError> => {
  const text = /^[a-z]+:\/\//i.test(flag) ? flag : `https://${flag}`
  try {
    const u = new URL(text)
    if (u.protocol !== "https:") return Effect.fail(new TenantError({ message: `--${what} ${flag}: the ${what} is reached over HTTPS only (https://host:port)` }))
    return Effect.succeed(`${u.protocol}//${u.host}`)
  } catch {
    return Effect.fail(new TenantError({ message: `--${what} ${flag}: not an address (https://host:port)` }))
  }
}

/** Where `attest up` keeps its CA, relative to the directory it ran in. */
const UP_CA_DIR = path.join(".attest", "cv_ca")

/**
 * When the CA directory in use holds no CA but `attest up`'s does (./.attest/cv_ca), what to set:
 * the tenant's default is a server's directory, while a first run made the admin certificate there.
 */
export const elsewhere = (options: Pick<TenantOptions, "ca_dir" | "tls_dir">, cwd = process.cwd()): string | undefined => {
  const up = path.resolve(cwd, UP_CA_DIR)
  const inUse = path.resolve(cwd, options.tls_dir === "default" || options.tls_dir === "generate" || options.tls_dir === "" ? options.ca_dir : options.tls_dir)
  if (inUse === up || fs.existsSync(path.join(inUse, CA_FILES.caCert)) || !fs.existsSync(path.join(up, CA_FILES.caCert))) return undefined
  return `${inUse} holds no ${CA_FILES.caCert}; attest up made a CA with an admin certificate in ${up}: ` +
    `set ATTEST_TENANT_CA_DIR=${UP_CA_DIR} (or ca_dir in [tenant] of --config)`
}

/** Settings from the already read config sources (tests give them directly). */
export const settingsFrom = (options: TenantOptions, flags: Pick<TenantFlags, "verifier" | "registrar">) =>
  Effect.gen(function*() {
    const verifierUrl = Option.isSome(flags.verifier)
      ? yield* normalizeUrl(flags.verifier.value, "verifier")
      : `https://${host(options.verifier_ip)}:${options.verifier_port}`
    const registrarUrl = Option.isSome(flags.registrar)
      ? yield* normalizeUrl(flags.registrar.value, "registrar")
      : `https://${host(options.registrar_ip)}:${options.registrar_port}`
    const material = yield* resolveClientTls({
      tlsDir: options.tls_dir,
      clientKey: options.client_key,
      clientCert: options.client_cert,
      trustedServerCa: options.trusted_server_ca,
      caDir: options.ca_dir
    }).pipe(Effect.mapError((e) => new TenantError({ message: `tenant TLS (tls_dir ${options.tls_dir}): ${elsewhere(options) ?? e.message}` })))
    return {
      verifierUrl,
      registrarUrl,
      tls: { cert: material.cert, key: material.key, ca: material.ca.join("\n") },
      options
    } satisfies TenantSettings
  })

/** Reads `[tenant]` from the environment and `--config`, then the flags and TLS files. */
export const loadSettings = (flags: TenantFlags) =>
  resolveFromSources("tenant").pipe(
    Effect.provide(ConfigSources.fromFile(flags.config)),
    Effect.mapError((e) => new TenantError({ message: e.problems.map((p) => `[${p.section}] ${p.option}: ${p.reason}`).join("; ") || e.message })),
    Effect.flatMap((r) => settingsFrom(r.values, flags))
  )

/**
 * Settings for a tenant inside another command (`attest up` enrolling its agents through `add`):
 * `[tenant]` defaults with the CA directory as `tls_dir`, the given EK trust store and addresses.
 */
export const localSettings = (o: {
  readonly caDir: string
  readonly ekCaDir: string
  readonly registrarUrl: string
  readonly verifierUrl: string
  readonly options?: Partial<TenantOptions>
}) =>
  settingsFrom(
    sectionDefaults(tenantSection, { tls_dir: o.caDir, ca_dir: o.caDir, ek_ca_dir: o.ekCaDir, ...o.options }),
    { registrar: Option.some(o.registrarUrl), verifier: Option.some(o.verifierUrl) }
  )
