/**
 * The logger of a running component, chosen by its section's `log_format` and `log_level`:
 *
 *   - `pretty`: Effect's pretty logger (colours on a terminal), what `NodeRuntime.runMain` installs;
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
import { Console, Effect, FiberRef, HashSet, Layer, Logger, LogLevel } from "effect"
import type { LogFormat, LogLevelName } from "../src/config/operationsOptions.js"

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

/** The logger writing one line per entry in the format. */
export const loggerOf = (format: LogFormat): Logger.Logger<unknown, void> =>
  format === "json"
    ? Logger.withConsoleLog(Logger.jsonLogger)
    : format === "logfmt"
    ? Logger.withConsoleLog(Logger.logfmtLogger)
    : Logger.prettyLoggerDefault

/** Installs the format's logger in place of the default and pretty ones (the tracer logger stays). */
const replaceConsoleLoggers = (logger: Logger.Logger<unknown, void>) =>
  Layer.scopedDiscard(
    Effect.locallyScopedWith(FiberRef.currentLoggers, (loggers) =>
      loggers.pipe(
        HashSet.remove(Logger.defaultLogger),
        HashSet.remove(Logger.prettyLoggerDefault),
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
