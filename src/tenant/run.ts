/**
 * How every `attest tenant` command runs: settings (flags over `[tenant]`), connections for the
 * command's lifetime, the command's work, and its output as text or `--json`. Any failure, and any
 * defect, ends as one line `attest tenant <command>: <reason>` on stderr (exit 1; usage errors 2).
 */
import { Cause, Console, Effect, type Scope } from "effect"
import { UsageError } from "../config/usageError.js"
import { type Connections, connect } from "./connect.js"
import { TenantError } from "./errors.js"
import { loadSettings, type TenantFlags } from "./settings.js"

export interface CommonFlags extends TenantFlags {
  readonly json: boolean
}

export interface Output {
  readonly json: boolean
  /** Prints `value` as JSON with --json, else the text. */
  readonly show: (value: unknown, text: () => string) => Effect.Effect<void>
  /** A progress line (stderr, so --json output stays one document). */
  readonly note: (line: string) => Effect.Effect<void>
}

export const makeOutput = (json: boolean): Output => ({
  json,
  show: (value, text) => Console.log(json ? JSON.stringify(value, null, 2) : text()),
  note: (line) => Console.error(line)
})

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, "; ").trim()

export const runTenant = <A>(
  name: string,
  flags: CommonFlags,
  body: (c: Connections, out: Output) => Effect.Effect<A, TenantError | UsageError, Scope.Scope>
): Effect.Effect<void, TenantError | UsageError> =>
  Effect.gen(function*() {
    const settings = yield* loadSettings(flags)
    const c = yield* connect(settings)
    yield* body(c, makeOutput(flags.json))
  }).pipe(
    Effect.scoped,
    Effect.catchAllDefect((d) => Effect.fail(new TenantError({ message: `internal error: ${d instanceof Error ? d.message : Cause.pretty(Cause.die(d))}` }))),
    Effect.tapError((e) => Console.error(`attest tenant ${name}: ${oneLine(e.message)}`))
  )
