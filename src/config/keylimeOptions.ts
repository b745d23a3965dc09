/**
 * What `attest config import` knows about Keylime's options beyond "attest has an option of the same
 * name": renamed options, values that mean something else in attest, and options attest has no use
 * for, each with the reason a Keylime operator reads. An option not listed here is carried over when
 * attest's section has it (sections.ts; options added there are picked up by the import) and
 * reported as unknown otherwise.
 */
import * as path from "node:path"
import type { TomlValue } from "./toml.js"

export type SkipKind = "unknown to attest" | "not applicable" | "value not supported"

export type Outcome =
  /** Carry `value` into attest's `option` (decoded by attest's option table next). */
  | { readonly carry: { readonly option: string; readonly value: TomlValue; readonly note?: string } }
  | { readonly skip: { readonly kind: SkipKind; readonly reason: string } }

export interface RuleContext {
  /** Keylime's working directory (KEYLIME_DIR, or the agent's keylime_dir): base of relative paths. */
  readonly keylimeDir: string
}

/** A rule sees the option's value (INI text, or the TOML value of the agent's file). */
export type Rule = (value: TomlValue, option: string, ctx: RuleContext) => Outcome

const carry = (option: string, value: TomlValue, note?: string): Outcome => ({ carry: note === undefined ? { option, value } : { option, value, note } })
const skip = (kind: SkipKind, reason: string): Outcome => ({ skip: { kind, reason } })
const notApplicable = (reason: string): Rule => () => skip("not applicable", reason)
const text = (v: TomlValue): string => (typeof v === "string" ? v : JSON.stringify(v))
const isOff = (v: TomlValue) => v === "" || v === false || (typeof v === "string" && /^(false|no|off|0)$/i.test(v))
/** Not applicable while the value is empty/off (Keylime's default); not supported when it is set. */
const onlyWhenOff = (reason: string): Rule => (v) =>
  isOff(v) ? skip("not applicable", `${reason} (off here)`) : skip("value not supported", reason)

const password: Rule = (v) =>
  v === ""
    ? skip("not applicable", "no password is set; attest reads unencrypted private keys")
    : skip(
      "value not supported",
      "attest reads unencrypted private keys (mode 0600): decrypt the key (openssl pkey -in <key> -out <plain key>) and point the key option at it"
    )

/** Keylime resolves a relative directory against its working directory; attest against its own. */
const underKeylimeDir: Rule = (v, option, ctx) =>
  typeof v === "string" && v !== "" && v !== "default" && v !== "generate" && !path.isAbsolute(v)
    ? carry(option, path.join(ctx.keylimeDir, v), `relative to Keylime's directory ${ctx.keylimeDir}`)
    : carry(option, v)

const defaultPath = (attestDefault: string): Rule => (v, option) =>
  v === "default" ? carry(option, attestDefault, "Keylime's `default`") : carry(option, v)

/** SQLAlchemy URL → attest's database_url. */
const databaseUrl: Rule = (v, option) => {
  const url = text(v).trim()
  if (url === "sqlite" || url === "") {
    return carry(option, "", "Keylime's SQLite database is not migrated: attest keeps its own under data_dir")
  }
  const pg = /^postgres(?:ql)?(?:\+[a-z0-9_]+)?:\/\/(.*)$/i.exec(url)
  if (pg) return carry(option, `postgresql://${pg[1]}`, "attest adds its own tables to this database; Keylime's records are not migrated")
  if (/^sqlite:/i.test(url)) {
    return skip("value not supported", "attest keeps its own SQLite database under data_dir (Keylime's records are not migrated); leave database_url empty")
  }
  return skip("value not supported", "attest stores data in SQLite or PostgreSQL (postgresql://…)")
}

/** Keylime's `size,overflow` (SQLAlchemy's pool and its overflow) → attest's one bound, their sum. */
const poolSize: Rule = (v) => {
  const m = /^\s*(\d+)\s*,\s*(\d+)\s*$/.exec(text(v))
  if (m === null) return skip("value not supported", "expected Keylime's `size,overflow` (e.g. 5,10); set attest's database_pool_max instead")
  return carry("database_pool_max", Math.max(1, Number(m[1]) + Number(m[2])), "the most connections: Keylime's pool size plus its overflow")
}

const DURABLE = "attest has no durable attestation backend (persistent store, transparency log, time-stamp authority)"
const WORKERS = "attest serves every request from one process with fibers: there are no worker processes to size"
const LOGGING = "Python logging configuration: attest logs to stderr (--log-level, `attest up --verbose`)"

/** Rules for an option in any section. */
export const anySection: Readonly<Record<string, Rule>> = {
  version: notApplicable("the version of Keylime's configuration file format; attest's TOML has none"),
  server_key_password: password,
  client_key_password: password,
  tls_dir: underKeylimeDir,
  database_url: databaseUrl,
  database_pool_sz_ovfl: poolSize,
  auto_migrate_db: notApplicable("attest applies its database migrations at every start"),
  num_workers: notApplicable(WORKERS),
  max_workers: notApplicable(WORKERS),
  cert_subject_alternative_names: (v) =>
    isOff(v)
      ? skip("not applicable", "no extra names are set")
      : skip("value not supported", "give extra server certificate names to `attest ca init --server-name <name>` instead"),
  durable_attestation_import: onlyWhenOff(DURABLE),
  persistent_store_url: onlyWhenOff(DURABLE),
  transparency_log_url: onlyWhenOff(DURABLE),
  time_stamp_authority_url: onlyWhenOff(DURABLE),
  time_stamp_authority_certs_path: onlyWhenOff(DURABLE),
  persistent_store_format: notApplicable(DURABLE),
  persistent_store_encoding: notApplicable(DURABLE),
  transparency_log_sign_algo: notApplicable(DURABLE),
  signed_attributes: notApplicable(DURABLE)
}

const AGENT_ID_KINDS = "attest's agent takes a fixed UUID or hash_ek (the SHA-256 of the EK)"

/** Rules by attest section (they win over `anySection`). */
export const bySection: Readonly<Record<string, Readonly<Record<string, Rule>>>> = {
  verifier: {
    uuid: (v) => carry("verifier_id", v, "Keylime's uuid"),
    // Keylime's [revocations] list: agent and webhook carried over, zeromq (attest has no ZeroMQ notifier) left out
    enabled_revocation_notifications: (v, option) => {
      const names = typeof v === "string" ? (v.match(/[A-Za-z_]+/g) ?? []) : Array.isArray(v) ? v.map(String) : []
      const kept = names.filter((n) => n !== "zeromq")
      return kept.length === names.length
        ? carry(option, kept)
        : carry(option, kept, "zeromq left out: attest has no ZeroMQ notifier (agent: POST to the agents; webhook: POST to webhook_url)")
    }
  },
  tenant: {
    tpm_cert_store: (v) => carry("ek_ca_dir", v, "Keylime's tpm_cert_store"),
    ek_check_script: onlyWhenOff("attest runs no EK check script: put the TPM manufacturers' CA certificates in ek_ca_dir"),
    mb_refstate: onlyWhenOff("attest takes a measured-boot reference state per agent when it is enrolled, not from the configuration")
  },
  agent: {
    uuid: (v, option) =>
      typeof v === "string" && ["generate", "dmidecode", "hostname", "environment"].includes(v)
        ? skip("value not supported", `${AGENT_ID_KINDS}; Keylime's "${v}" has no equivalent`)
        : carry(option, v),
    keylime_dir: (v) =>
      skip("not applicable", `attest keeps the agent's state in data_dir; ${text(v)} is used for ca_dir (${text(v)}/cv_ca) and relative paths`),
    agent_data_path: notApplicable("attest keeps the agent's state (AK, id, TLS key) in data_dir/agent.json"),
    server_key: underKeylimeDir,
    server_cert: underKeylimeDir,
    trusted_client_ca: (v, option, ctx) =>
      typeof v === "string" && v !== "default" && !v.startsWith("[")
        ? carry(option, v.split(",").map((f) => f.trim()).filter((f) => f !== "").map((f) => (path.isAbsolute(f) ? f : path.join(ctx.keylimeDir, f))))
        : carry(option, v),
    ima_ml_path: defaultPath("/sys/kernel/security/ima/ascii_runtime_measurements"),
    measuredboot_ml_path: defaultPath("/sys/kernel/security/tpm0/binary_bios_measurements"),
    enc_keyname: notApplicable("attest names the files of a delivered payload itself (data_dir/secure)"),
    dec_payload_file: notApplicable("attest names the files of a delivered payload itself (data_dir/secure)"),
    secure_size: notApplicable("attest mounts no tmpfs for the payload; data_dir/secure is a 0700 directory"),
    extract_payload_zip: (v) =>
      isOff(v)
        ? skip("value not supported", "attest's agent always extracts a zip payload")
        : skip("not applicable", "attest's agent always extracts a zip payload"),
    tpm_ownerpassword: (v) =>
      v === ""
        ? skip("not applicable", "no owner password is set")
        : skip("value not supported", "attest's TPM layers use the owner hierarchy without a password"),
    revocation_cert: (v) =>
      v === "default"
        ? skip("not applicable", "attest reads the revocation certificate from the delivered payload, as Keylime's `default` does")
        : skip("value not supported", "attest reads the revocation certificate from the delivered payload (RevocationNotifier-cert.crt)"),
    run_as: notApplicable("start attest as the user it should run as (e.g. systemd User=, Group=tss)"),
    enable_iak_idevid: onlyWhenOff("attest's agent registers with its EK and AK; it has no IAK/IDevID support")
  },
  ca: {
    password: notApplicable("attest keeps the CA key unencrypted with mode 0600 in the CA directory"),
    cert_ca_name: notApplicable("`attest ca init` names its CA O=attest, CN=Attest CA"),
    cert_country: notApplicable("`attest ca init` sets only O and CN in certificate subjects"),
    cert_state: notApplicable("`attest ca init` sets only O and CN in certificate subjects"),
    cert_locality: notApplicable("`attest ca init` sets only O and CN in certificate subjects"),
    cert_organization: notApplicable("`attest ca init` sets only O and CN in certificate subjects"),
    cert_org_unit: notApplicable("`attest ca init` sets only O and CN in certificate subjects"),
    cert_ca_lifetime: (v) =>
      text(v) === "3650"
        ? skip("not applicable", "`attest ca init` makes a CA valid for 3650 days, as here")
        : skip("value not supported", "`attest ca init` makes a CA valid for 3650 days"),
    cert_lifetime: notApplicable("give the validity to `attest ca issue-admin --days <n>` (365 by default)"),
    cert_bits: (v) =>
      text(v) === "2048"
        ? skip("not applicable", "attest's CA makes RSA 2048 keys, as here")
        : skip("value not supported", "attest's CA makes RSA 2048 keys"),
    cert_crl_dist: notApplicable("attest's servers read the CA's CRL file (trusted_client_crl) instead of fetching a distribution point")
  }
}

/** Keylime sections that are not attest sections, with why their options are not carried over. */
export const otherSections = (section: string): { readonly kind: SkipKind; readonly reason: string } | undefined => {
  if (section === "revocations") {
    return {
      kind: "not applicable",
      reason: "attest has no ZeroMQ revocation notifier; its notifiers are [verifier] enabled_revocation_notifications (agent, webhook) and webhook_url, carried over"
    }
  }
  if (["cloud_verifier", "cloud_agent", "general"].includes(section)) {
    return {
      kind: "not applicable",
      reason: "Keylime 6's single keylime.conf layout: convert it with keylime_upgrade_config, then import the per-component files"
    }
  }
  if (["logging", "loggers", "handlers", "formatters"].includes(section) || /^(logger|handler|formatter)_/.test(section)) {
    return { kind: "not applicable", reason: LOGGING }
  }
  return undefined
}

/** Keylime's defaults that differ from attest's, written when the Keylime files leave them out. */
export const keylimeDefaults = (keylimeDir: string, ekStore: string | undefined) => ({
  ca_dir: { value: path.join(keylimeDir, "cv_ca"), note: "Keylime's CA directory (<keylime_dir>/cv_ca)" },
  ek_ca_dir: {
    value: ekStore ?? path.join(keylimeDir, "tpm_cert_store"),
    note: ekStore === undefined ? "Keylime's tpm_cert_store (<keylime_dir>/tpm_cert_store)" : "the tenant's tpm_cert_store"
  }
})
