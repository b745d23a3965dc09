/**
 * Operations options (issue 13), one block per section so each section's table gains one spread
 * line: logs (src/ops/Logging.ts), traces (src/ops/Tracing.ts), the metrics listener
 * (src/http/MetricsListener.ts, servers only) and the EAR signing key (src/ear, verifier only).
 */
import { literal, port, string } from "./option.js"

export const LOG_FORMATS = ["pretty", "json", "logfmt"] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

export const LOG_LEVELS = ["all", "trace", "debug", "info", "warning", "error", "fatal", "none"] as const
export type LogLevelName = (typeof LOG_LEVELS)[number]

/** Every section: log format and level, and the OTLP endpoint traces are sent to. */
export const observabilityOptions = {
  log_format: literal(LOG_FORMATS, "pretty", "log lines: pretty (for a terminal), json (one object per line) or logfmt (key=value)"),
  log_level: literal(LOG_LEVELS, "info", "lowest level logged: all, trace, debug, info, warning, error, fatal, none"),
  otlp_endpoint: string(
    "",
    "OTLP/HTTP collector base URL (e.g. http://127.0.0.1:4318); spans are POSTed to <url>/v1/traces as JSON. Empty: no exporter"
  )
} as const

/**
 * Servers: `GET /metrics` (Prometheus text) on a plain-HTTP listener of its own. The default port is
 * the component's service port + 1000 (Keylime has no metrics port; 9090 is Prometheus's own).
 */
const metricsListenerOptions = (defaultPort: number) => ({
  metrics_ip: string("127.0.0.1", "address of the plain-HTTP listener serving GET /metrics (Prometheus text format)"),
  metrics_port: port(defaultPort, "port of the metrics listener; 0 turns it off")
}) as const

export const VERIFIER_METRICS_PORT = 9881
export const REGISTRAR_METRICS_PORT = 9890

export const verifierOperationsOptions = {
  ...observabilityOptions,
  ...metricsListenerOptions(VERIFIER_METRICS_PORT),
  ear_signing_key: string(
    "default",
    "P-256 private key (PEM) signing EAR attestation results: default (ear-signing-key.pem in the TLS directory, generated when missing) or a path"
  )
} as const

export const registrarOperationsOptions = {
  ...observabilityOptions,
  ...metricsListenerOptions(REGISTRAR_METRICS_PORT)
} as const
