/**
 * src/ops/Logging.ts: each log_format's lines parse back with the agent id as a structured field,
 * runMain's pretty logger is replaced (one line per entry, not two), and log_level filters.
 */
import { describe, expect, it } from "@effect/vitest"
import { join } from "node:path"
import { Console, Effect, Layer, Logger } from "effect"
import { Logging, prettyLine } from "../../src/ops/Logging.js"
import type { LogFormat } from "../../src/config/operationsOptions.js"
import { closeClients, makeTestCa, RunningAgent, simulatedAgentLayer, tempDir } from "../agent/support.js"

/** A Console whose `unsafe.log` (what loggers write through) collects the lines. */
const capturing = () => {
  const lines: Array<string> = []
  const push = (...a: ReadonlyArray<unknown>) => void lines.push(a.map(String).join(" "))
  const unsafe = { ...globalThis.console, log: push, info: push, warn: push, error: push, debug: push, trace: push }
  const console = {
    ...globalThis.console,
    [Console.TypeId]: Console.TypeId,
    unsafe,
    log: (...a: ReadonlyArray<unknown>) => Effect.sync(() => push(...a)),
    error: (...a: ReadonlyArray<unknown>) => Effect.sync(() => push(...a))
  } as unknown as Console.Console
  return { lines, console }
}

/** logfmt: `key=value` or `key="quoted \" value"` pairs. */
const parseLogfmt = (line: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const m of line.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = m[2]!
    out[m[1]!] = raw.startsWith("\"") ? JSON.parse(raw) as string : raw
  }
  return out
}

const logAboutAgent = Effect.logInfo("quote verified").pipe(Effect.annotateLogs("agent_id", "d432fbb3-0000-4000-8000-000000000001"))

const run = (format: LogFormat, effect: Effect.Effect<void>, level: "info" | "warning" = "info") =>
  Effect.gen(function*() {
    const { console, lines } = capturing()
    yield* effect.pipe(
      Effect.provide(Logging.layer({ log_format: format, log_level: level })),
      // what NodeRuntime.runMain installs: the pretty logger in place of the default one
      Effect.provide(Logger.replace(Logger.defaultLogger, Logger.prettyLoggerDefault)),
      Effect.withConsole(console)
    )
    return lines
  })

describe("log formats", () => {
  it.effect("json: one object per line, the agent id under annotations", () =>
    Effect.gen(function*() {
      const lines = yield* run("json", logAboutAgent)
      expect(lines).toHaveLength(1)
      const entry = JSON.parse(lines[0]!) as Record<string, unknown>
      expect(entry).toMatchObject({ message: "quote verified", logLevel: "INFO", annotations: { agent_id: "d432fbb3-0000-4000-8000-000000000001" } })
    }))

  it.effect("logfmt: key=value pairs, agent_id a key of its own", () =>
    Effect.gen(function*() {
      const lines = yield* run("logfmt", logAboutAgent)
      expect(lines).toHaveLength(1)
      const fields = parseLogfmt(lines[0]!)
      expect([fields["level"], fields["message"], fields["agent_id"]]).toEqual(["INFO", "quote verified", "d432fbb3-0000-4000-8000-000000000001"])
    }))

  it.effect("pretty: one line with the message and the agent id", () =>
    Effect.gen(function*() {
      const lines = yield* run("pretty", logAboutAgent)
      const text = lines.join("\n")
      expect(lines).toHaveLength(1)
      expect(text).toContain("agent d432fbb3-0000-4000-8000-000000000001: quote verified")
    }))

  it.effect("pretty: time, level, the agent the line is about, the message and other annotations; no fiber number or span timer", () =>
    Effect.gen(function*() {
      const lines = yield* run(
        "pretty",
        Effect.logWarning("attestation failed: ima.validation.ima-ng.not_in_allowlist").pipe(
          Effect.annotateLogs({ agent_id: "d432fbb3-0000-4000-8000-000000000001", notifier: "agent" }),
          Effect.withLogSpan("agent")
        )
      )
      expect(lines.map((l) => l.replace(/^\[\d\d:\d\d:\d\d\.\d{3}\] /, "[time] "))).toEqual([
        "[time] WARN agent d432fbb3-0000-4000-8000-000000000001: attestation failed: ima.validation.ima-ng.not_in_allowlist notifier=agent"
      ])
    }))

  it("pretty: a failure's cause goes on the lines below, indented", () => {
    expect(prettyLine({ date: new Date(2026, 0, 1, 9, 5, 7, 12), level: "ERROR", message: ["stopped"], annotations: [], cause: "Error: boom\n    at x" }))
      .toEqual("[09:05:07.012] ERROR stopped\n  Error: boom\n      at x")
  })

  it.effect("log_level drops lines below it", () =>
    Effect.gen(function*() {
      const lines = yield* run("json", Effect.zipRight(Effect.logInfo("routine"), Effect.logWarning("attention")), "warning")
      expect(lines.map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(["attention"])
    }))

  it.effect("a start-up line is text in pretty mode and a parseable log line otherwise, whatever the level", () =>
    Effect.gen(function*() {
      const pretty = yield* run("pretty", Logging.say("pretty")("registrar on http://127.0.0.1:8890"), "warning")
      expect(pretty).toEqual(["registrar on http://127.0.0.1:8890"])
      const json = yield* run("json", Logging.say("json")("registrar on http://127.0.0.1:8890"), "warning")
      expect(json.map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(["registrar on http://127.0.0.1:8890"])
    }))
})

describe("an agent's lines in json", () => {
  it.live("carry its id as annotations.agent_id on every line it logs at start", () =>
    Effect.gen(function*() {
      const { console, lines } = capturing()
      const dir = yield* tempDir("attest-ops-logs-")
      const ca = yield* makeTestCa(join(dir, "ca"))
      yield* Effect.addFinalizer(() => Effect.sync(closeClients))
      const id = "ops-logs-agent"
      yield* Effect.scoped(
        Effect.gen(function*() {
          const ctx = yield* Layer.build(simulatedAgentLayer({ agentId: id, dataDir: join(dir, id), trustedClientCa: ca.caPem }, { name: id }))
          yield* Effect.provide(RunningAgent, ctx)
        })
      ).pipe(Effect.provide(Logging.layer({ log_format: "json", log_level: "info" })), Effect.withConsole(console))
      const entries = lines.map((l) => JSON.parse(l) as { message: string; annotations: Record<string, unknown> })
      const agentLines = entries.filter((e) => !String(e.message).startsWith("simulated machine "))
      expect(agentLines.some((e) => String(e.message).startsWith("agent starting"))).toBe(true)
      expect(agentLines.filter((e) => e.annotations["agent_id"] !== id).map((e) => e.message)).toEqual([])
    }).pipe(Effect.scoped), 120_000)
})
