/**
 * The option tables of the four config sections, with Keylime's option names and defaults.
 * Adding an option = one line here; decoding, `attest config show` and unknown-option errors
 * follow from the table.
 */
import { clusterOptions } from "./clusterOptions.js"
import { listenerTimeoutOptions } from "./listenerOptions.js"
import { literalList } from "./literalList.js"
import { observabilityOptions, registrarOperationsOptions, verifierOperationsOptions } from "./operationsOptions.js"
import { boolean, integer, literal, port, seconds, secondsOr, type SectionSpec, type SectionValues, string, stringList } from "./option.js"

const DATA_DIR = "/var/lib/attest"
const CA_DIR = "/var/lib/attest/cv_ca"

const serverTls = {
  tls_dir: string("default", "TLS directory: generate (create the CA in ca_dir), default (use ca_dir) or a path"),
  server_key: string("default", "server private key: default (server-private.pem in the TLS directory) or a path"),
  server_cert: string("default", "server certificate: default (server-cert.crt in the TLS directory) or a path"),
  trusted_client_ca: stringList(["default"], "CA certificates that sign admin client certificates (default: cacert.crt)"),
  trusted_client_crl: string(
    "default",
    "CRL revoking admin client certificates: default (cacrl.der in the TLS directory, if present) or a path; one that does not verify stops start-up"
  ),
  crl_refresh_interval: seconds(
    60,
    "seconds between re-reads of trusted_client_crl (it is also re-read when its file changes); a new CRL that does not verify is ignored and the one in force kept"
  ),
  ca_dir: string(CA_DIR, "server components CA directory used by tls_dir = default / generate")
} as const

const database = {
  database_url: string("", "empty for SQLite under data_dir, or a postgres:// URL"),
  data_dir: string(DATA_DIR, "directory for the SQLite database and other state"),
  database_pool_max: integer(
    10,
    "PostgreSQL: the most connections this process opens to the database (its pool; a request waits for a free one). At least 2 on PostgreSQL (3 with cluster = true): smaller pools are refused at start. Every process (each cluster runner, the registrar) has its own: the server's max_connections must exceed their sum. SQLite uses one",
    { min: 1, max: 1000 }
  ),
  authorization_provider: literal(["simple"], "simple", "authorization provider for admin operations")
} as const

export const verifierSection = {
  ip: string("127.0.0.1", "address the verifier listens on (also in its generated certificate)"),
  port: port(8881, "HTTPS port of the verifier"),
  ...serverTls,
  tls_dir: string("generate", serverTls.tls_dir.doc),
  client_key: string("default", "key the verifier presents to agents (client-private.pem)"),
  client_cert: string("default", "certificate the verifier presents to agents (client-cert.crt)"),
  trusted_server_ca: stringList(["default"], "CAs trusted for agent server certificates"),
  enable_agent_mtls: boolean(true, "talk to pull agents over mTLS"),
  ...database,
  // --- the pull loops' writes, batched on PostgreSQL (src/verifier/pull/writeBatch.ts) ---
  database_write_batch_window: secondsOr(
    "auto",
    "auto",
    "PostgreSQL: the pull loops' writes (verdicts and their notices) gathered this many seconds (e.g. 0.1) go to the database in one transaction, each still fenced and answered on its own; 0 writes each alone; auto (the default): 0.1 with cluster = true, 0 without. SQLite always writes each alone"
  ),
  database_write_batch_max: integer(100, "PostgreSQL: a batch of the pull loops' writes is sent as soon as this many wait, before its window ends", { min: 1 }),
  verifier_id: string("default", "name of this verifier"),
  mode: literal(["pull", "push"], "pull", "attestation model"),
  quote_interval: seconds(2, "seconds between quotes of one agent"),
  retry_interval: seconds(2, "base of the retry backoff when an agent is unreachable (seconds)"),
  exponential_backoff: boolean(true, "retry_interval^n backoff instead of a fixed delay"),
  max_retries: integer(5, "retries before an unreachable agent is marked failed", { min: 0 }),
  // --- the evidence evaluator (src/attestation/evaluate) ---
  severity_labels: stringList(
    ["info", "notice", "warning", "error", "critical", "alert", "emergency"],
    "severity labels of attestation failures, lowest first; the last is the maximum (reaching it stops polling)"
  ),
  severity_policy: string(
    `[{"event_id": ".*", "severity_label": "emergency"}]`,
    "JSON list of {event_id: regular expression over the whole failure type, severity_label}; first match wins, none = the maximum"
  ),
  measured_boot_policy_name: string("accept-all", "measured-boot policy judging reference states: accept-all, reject-all, example"),
  measured_boot_evaluate: literal(["once", "always"], "once", "judge the boot log by the measured-boot policy on the first attestation only, or on every one"),
  ignore_tomtou_errors: boolean(false, "Keylime's option: when true, ToMToU IMA entries are reported as ima.validation.tomtou (its code reads it inverted)"),
  request_timeout: seconds(60, "timeout of requests to agents (seconds)"),
  ek_ca_dir: string(`${DATA_DIR}/tpm_cert_store`, "TPM manufacturer CA certificates (EK certificate trust store)"),
  require_ek_cert: boolean(true, "refuse agents whose EK certificate does not chain to ek_ca_dir"),
  snp_vcek_dir: string("", "AMD SEV-SNP VCEK certificates for TEE evidence, read once at start (empty: only VCEKs sent with the evidence)"),
  session_lifetime: seconds(180, "lifetime of push-model PoP tokens (seconds)"),
  // --- push model (API 3.0, src/verifier/push): Keylime's names and defaults ---
  nonce_lifetime: seconds(60, "push model: seconds a session challenge may be answered"),
  challenge_lifetime: seconds(1800, "push model: seconds an attestation's challenge may be answered with evidence"),
  verification_timeout: seconds(60, "push model: seconds a background verification may take (503 verification_in_progress meanwhile)"),
  extend_token_on_attestation: boolean(true, "push model: a passed attestation extends the agent's token by session_lifetime"),
  push_attestations_kept: integer(100, "push model: attestations kept per agent, its latest ones; older completed ones are deleted as new ones arrive (0 keeps all)", { min: 0 }),
  auto_recover_attestation_failures: boolean(false, "push model: a passed attestation clears earlier failures (else status stays FAIL until re-added)"),
  session_create_rate_limit_per_ip: integer(50, "push model: sessions one client address (an IPv6 /64) may create per window, and failed proofs it may send", { min: 1 }),
  session_create_rate_limit_window_ip: seconds(60, "push model: window of session_create_rate_limit_per_ip (seconds)"),
  session_create_rate_limit_per_agent: integer(15, "push model: tokens one agent may obtain per window (only proofs made with its AK count: no one else can spend it)", { min: 1 }),
  session_create_rate_limit_window_agent: seconds(60, "push model: window of session_create_rate_limit_per_agent (seconds)"),
  // --- verifier core: policies, agents' certificates, revocation notifications ---
  require_allow_list_signatures: boolean(false, "refuse runtime policies that are not signed (DSSE envelope or runtime_policy_sig)"),
  enabled_revocation_notifications: literalList(["agent", "webhook"], ["agent"], "notifiers of revocation events: agent (POST to the agents), webhook (POST to webhook_url)"),
  webhook_url: string("", "URL the webhook notifier POSTs revocation messages to"),
  notification_retry_interval: seconds(2, "first delay before a failed notification is retried (doubles each attempt)"),
  notification_max_interval: seconds(300, "longest delay between retries of a notification"),
  notification_max_attempts: integer(0, "attempts before a notification is given up (0: until delivered)", { min: 0 }),
  notification_queue_size: integer(10_000, "notifications kept per notifier while it is unreachable (oldest dropped beyond)", { min: 1 }),
  agent_ca: stringList([], "CA certificates that sign agents' HTTPS certificates; empty: trust exactly each agent's mtls_cert"),
  max_upload_size: integer(104_857_600, "largest accepted request body in bytes (runtime policies are large)", { min: 1024 }),
  policy_cache_size: integer(16, "compiled runtime policies (and measured-boot reference states) kept in memory", { min: 1 }),
  // --- stateless checks (verify/evidence, verify/identity): judged by worker threads off the event loop that serves agents ---
  verify_evidence_max_body_size: integer(
    201_326_592,
    "largest verify/evidence request body in bytes (max_upload_size does not apply to it); 192 MiB holds a 1,000,000-entry IMA list (183 MB as JSON with the sha256 template-hash column, 159 MB with sha1); over it: 413",
    { min: 1024 }
  ),
  verify_workers: integer(0, "worker threads that judge verify/evidence and verify/identity (0: one per CPU core but one, at least 1)", { min: 0 }),
  verify_worker_nice: integer(
    0,
    "scheduling niceness of those threads on Linux (0-19): above 0 the attestation loop is served first when the CPU is short, but verify/* requests then also yield to every other busy process (bench public-flood on a busy 2-core machine: 10 kept 0.98 of the attestation rate under a flood and served small requests at 0.4x; 0 kept 0.95 at 0.9x)",
    { min: 0, max: 19 }
  ),
  verify_queue_size: integer(
    32,
    "verify/* requests that may wait for a worker beyond those being judged; past it the answer is 503 with Retry-After, before the body is read (each waiting request holds its body in memory)",
    { min: 0 }
  ),
  verify_inline_max_body_size: integer(
    65_536,
    "verify/evidence bodies up to this many bytes are judged on the server's own thread (a few milliseconds at most: the hop to a worker would cost more than the judging, bench verify-evidence: 1.13 ms of CPU per small request inline, 1.99 ms through a worker); larger ones go to the workers; 0: every body goes to a worker",
    { min: 0 }
  ),
  verify_policy_cache_size: integer(8, "compiled verify/evidence runtime policies each worker keeps by content hash (and at most 256 MiB of their text), least recently used dropped first", { min: 1 }),
  // --- operations: logs, traces, metrics listener, EAR key (src/config/operationsOptions.ts) ---
  ...verifierOperationsOptions,
  // --- slow clients: TLS handshake, headers, request, keep-alive (src/config/listenerOptions.ts) ---
  ...listenerTimeoutOptions,
  // --- cluster mode: runners sharing the pull agents on one PostgreSQL (src/config/clusterOptions.ts) ---
  ...clusterOptions
} as const satisfies SectionSpec

export const registrarSection = {
  ip: string("127.0.0.1", "address the registrar listens on"),
  port: port(8890, "plain HTTP port (agent registration and activation)"),
  tls_port: port(8891, "HTTPS port (admin operations, mTLS)"),
  ...serverTls,
  ...database,
  ek_ca_dir: string(`${DATA_DIR}/tpm_cert_store`, "TPM manufacturer CA certificates (EK certificate trust store)"),
  tpm_identity: literal(["default", "ek_cert", "iak_idevid", "ek_cert_or_iak_idevid"], "default", "which TPM identity registration requires"),
  max_body_size: integer(1_048_576, "largest accepted request body in bytes", { min: 1024 }),
  // --- operations: logs, traces, metrics listener (src/config/operationsOptions.ts) ---
  ...registrarOperationsOptions,
  // --- slow clients: TLS handshake, headers, request, keep-alive (src/config/listenerOptions.ts) ---
  ...listenerTimeoutOptions
} as const satisfies SectionSpec

export const tenantSection = {
  verifier_ip: string("127.0.0.1", "verifier address"),
  verifier_port: port(8881, "verifier HTTPS port"),
  registrar_ip: string("127.0.0.1", "registrar address"),
  registrar_port: port(8891, "registrar HTTPS (admin) port"),
  tls_dir: string("default", "TLS directory: default (ca_dir) or a path"),
  client_key: string("default", "admin client key (client-private.pem)"),
  client_cert: string("default", "admin client certificate (client-cert.crt)"),
  trusted_server_ca: stringList(["default"], "CAs trusted for verifier and registrar certificates"),
  ca_dir: string(CA_DIR, "server components CA directory used by tls_dir = default"),
  ek_ca_dir: string(`${DATA_DIR}/tpm_cert_store`, "TPM manufacturer CA certificates"),
  require_ek_cert: boolean(true, "refuse agents whose EK certificate does not chain to ek_ca_dir"),
  accept_tpm_hash_algs: stringList(["sha512", "sha384", "sha256"], "hash algorithms accepted for quotes"),
  accept_tpm_encryption_algs: stringList(["ecc", "rsa"], "encryption algorithms accepted"),
  accept_tpm_signing_algs: stringList(["ecschnorr", "rsassa"], "signing algorithms accepted"),
  request_timeout: seconds(60, "timeout of requests (seconds)"),
  max_retries: integer(5, "retries of a failed request", { min: 0 }),
  retry_interval: seconds(2, "seconds between retries"),
  verify_timeout: seconds(60, "add --verify: how long to wait for the verifier to deliver V; delete: for a terminating agent to go"),
  // --- operations: logs, traces (src/config/operationsOptions.ts) ---
  ...observabilityOptions
} as const satisfies SectionSpec

export const agentSection = {
  uuid: string("d432fbb3-d2f1-4a97-9ef7-75bd81c00000", "agent id; hash_ek derives it from the EK"),
  ip: string("127.0.0.1", "address the pull agent listens on"),
  port: port(9002, "HTTPS port of the pull agent"),
  contact_ip: string("127.0.0.1", "address the verifier uses to reach the agent (sent to the registrar)"),
  contact_port: port(9002, "port the verifier uses to reach the agent"),
  registrar_ip: string("127.0.0.1", "registrar address"),
  registrar_port: port(8890, "registrar plain HTTP port"),
  verifier_url: string("https://localhost:8881", "verifier base URL (push model)"),
  enable_agent_mtls: boolean(true, "serve HTTPS with client certificate checks"),
  server_key: string("default", "agent TLS key (generated in data_dir when default)"),
  server_cert: string("default", "agent TLS certificate (generated in data_dir when default)"),
  trusted_client_ca: stringList(["default"], "CAs of verifier/tenant client certificates (default: ca_dir/cacert.crt)"),
  ca_dir: string(CA_DIR, "server components CA directory"),
  data_dir: string(`${DATA_DIR}/agent`, "agent state directory"),
  tpm_hash_alg: literal(["sha1", "sha256", "sha384", "sha512"], "sha256", "hash algorithm of quotes and the AK"),
  tpm_encryption_alg: literal(["rsa", "ecc"], "rsa", "EK/AK key type"),
  tpm_signing_alg: literal(["rsassa", "rsapss", "ecdsa", "ecschnorr"], "rsassa", "AK signing scheme"),
  ek_handle: string("generate", "persistent EK handle, or generate"),
  enable_revocation_notifications: boolean(false, "listen for revocation notifications"),
  payload_script: string("autorun.sh", "script run from a delivered payload"),
  ima_ml_path: string("/sys/kernel/security/ima/ascii_runtime_measurements", "IMA measurement list"),
  measuredboot_ml_path: string("/sys/kernel/security/tpm0/binary_bios_measurements", "UEFI event log"),
  attestation_interval_seconds: seconds(60, "push model: seconds between attestations"),
  verifier_tls_ca_cert: string("default", "push model: CA of the verifier's HTTPS certificate (default: ca_dir/cacert.crt)"),
  exponential_backoff_initial_delay: integer(10_000, "push model: first retry delay after a failed attempt (milliseconds)", { min: 1 }),
  exponential_backoff_max_delay: integer(300_000, "push model: longest retry delay (milliseconds)", { min: 1 }),
  exponential_backoff_multiplier: integer(2, "push model: factor between consecutive retry delays", { min: 1 }),
  exponential_backoff_max_retries: integer(5, "push model: retries of one failing step before the delay stays at its maximum", { min: 0 }),
  exponential_backoff_jitter: boolean(false, "push model: randomise each retry delay between half and all of it"),
  // --- operations: logs, traces (src/config/operationsOptions.ts) ---
  ...observabilityOptions
} as const satisfies SectionSpec

export const sections = {
  verifier: verifierSection,
  registrar: registrarSection,
  tenant: tenantSection,
  agent: agentSection
} as const

export type SectionName = keyof typeof sections
export const sectionNames = Object.keys(sections) as ReadonlyArray<SectionName>

export type VerifierOptions = SectionValues<typeof verifierSection>
export type RegistrarOptions = SectionValues<typeof registrarSection>
export type TenantOptions = SectionValues<typeof tenantSection>
export type AgentOptions = SectionValues<typeof agentSection>
