/**
 * The logger of a running component, chosen by its section's `log_format` and `log_level`:
 *
 *   - `pretty`: one line a person reads, `[20:33:17.258] WARN agent <id>: attestation failed: …`:
 *     time, level (coloured on a terminal), the agent the line is about, the message, other
 *     annotations as `key=value`, a failure's cause indented below; no fiber numbers or span
 *     timers (runMain's pretty logger prints both: internals nobody operating attest needs);
 *   - `json`: one JSON object per line, `{message, logLevel, timestamp, cause, annotations, spans, fiberId}`;
 *   - `logfmt`: one `key=value` line, `timestamp=… level=INFO fiber=#12 message="…" agent_id=…`.
 *
 * Annotations stay structured fields: an agent's lines carry `agent_id` (the agent annotates its
 * own, `Effect.annotateLogs("agent_id", id)`), under `annotations` in json and as a key in logfmt.
 * The layer replaces the default and the pretty logger (runMain's) and keeps the others (the tracer
 * logger that turns log lines into span events), so nothing is printed twice:
 *
 *   program.pipe(Effect.provide(Logging.fromSection(section)))
 *
 * Lines go to stdout through the Console service. `Logging.say(format)` prints a start-up line as
 * text for a person, or as an info log line when the output is meant for a machine (json, logfmt),
 * so every line of a json or logfmt run parses.
 */
import { Cause, Console, Context, DefaultServices, Effect, FiberRef, FiberRefs, HashMap, HashSet, Inspectable, Layer, Logger, LogLevel } from "effect"
import type { LogFormat, LogLevelName } from "../config/operationsOptions.js"

export interface LoggingOptions {
  readonly log_format: LogFormat
  readonly log_level: LogLevelName
}

const LEVELS: Readonly<Record<LogLevelName, LogLevel.LogLevel>> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

/** The Effect LogLevel of a `log_level` value. */
export const logLevelOf = (name: LogLevelName): LogLevel.LogLevel => LEVELS[name]

const COLOURS: Readonly<Record<string, string>> = { FATAL: "\x1b[1;31m", ERROR: "\x1b[31m", WARN: "\x1b[33m", INFO: "\x1b[32m", DEBUG: "\x1b[36m", TRACE: "\x1b[90m" }

const clock = (d: Date) =>
  `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}:${String(d.getSeconds()).padStart(2, "0")}.${String(d.getMilliseconds()).padStart(3, "0")}`

const text = (v: unknown): string => {
  const r = Inspectable.redact(v)
  return typeof r === "string" ? r : typeof r === "number" || typeof r === "boolean" || typeof r === "bigint" ? String(r) : Inspectable.format(r)
}

/**
 * What the pretty logger prints for an entry (pure; tested): `[time] LEVEL agent <id>: message
 * key=value…`, then the cause's lines indented: `agent_id` names the agent the line is about,
 * other annotations follow the message.
 */
export const prettyLine = (entry: {
  readonly date: Date
  readonly level: string
  readonly message: unknown
  readonly annotations: ReadonlyArray<readonly [string, unknown]>
  readonly cause?: string | undefined
  readonly colours?: boolean | undefined
}): string => {
  const messages = Array.isArray(entry.message) ? entry.message : [entry.message]
  const annotations = new Map(entry.annotations)
  const agentId = annotations.get("agent_id")
  annotations.delete("agent_id")
  const who = agentId === undefined ? "" : `agent ${text(agentId)}: `
  const rest = [...annotations].map(([k, v]) => ` ${k}=${text(v)}`).join("")
  const level = entry.colours === true ? `${COLOURS[entry.level] ?? ""}${entry.level}\x1b[0m` : entry.level
  const line = `[${clock(entry.date)}] ${level} ${who}${messages.map(text).join(" ")}${rest}`
  return entry.cause === undefined || entry.cause === "" ? line : `${line}\n${entry.cause.split("\n").map((l) => `  ${l}`).join("\n")}`
}

/** The `pretty` format: prettyLine through the Console service (so a command can route it, e.g. above attest up's table). */
export const prettyLogger = (colours: boolean): Logger.Logger<unknown, void> =>
  Logger.make(({ annotations, cause, context, date, logLevel, message }) => {
    const services = FiberRefs.getOrDefault(context, DefaultServices.currentServices)
    Context.get(services, Console.Console).unsafe.log(prettyLine({
      date,
      level: logLevel.label,
      message,
      annotations: [...HashMap.toEntries(annotations)],
      cause: Cause.isEmpty(cause) ? undefined : Cause.pretty(cause, { renderErrorCause: true }),
      colours
    }))
  })

/** The logger writing one line per entry in the format. */
export const loggerOf = (format: LogFormat): Logger.Logger<unknown, void> =>
  format === "json"
    ? Logger.withConsoleLog(Logger.jsonLogger)
    : format === "logfmt"
    ? Logger.withConsoleLog(Logger.logfmtLogger)
    : PRETTY

const PRETTY = prettyLogger(process.stdout.isTTY === true)

/** Installs the format's logger in place of the default and pretty ones (the tracer logger stays). */
const replaceConsoleLoggers = (logger: Logger.Logger<unknown, void>) =>
  Layer.scopedDiscard(
    Effect.locallyScopedWith(FiberRef.currentLoggers, (loggers) =>
      loggers.pipe(
        HashSet.remove(Logger.defaultLogger),
        HashSet.remove(Logger.prettyLoggerDefault),
        HashSet.remove(PRETTY),
        HashSet.add(logger)
      ))
  )

export const Logging = {
  layer: (o: LoggingOptions): Layer.Layer<never> =>
    Layer.merge(replaceConsoleLoggers(loggerOf(o.log_format)), Logger.minimumLogLevel(logLevelOf(o.log_level))),

  /** The section's `log_format` and `log_level`. */
  fromSection: (section: LoggingOptions): Layer.Layer<never> => Logging.layer(section),

  /**
   * A start-up line (the command's own output): text in pretty mode, an info log line (parseable)
   * in json and logfmt, printed whatever `log_level` says, as the text line would be.
   */
  say: (format: LogFormat) => (line: string): Effect.Effect<void> =>
    format === "pretty" ? Console.log(line) : Effect.logInfo(line).pipe(Logger.withMinimumLogLevel(LogLevel.Info))
} as const
