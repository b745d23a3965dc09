/** Helpers for the tenant suites: settings from a test CA directory, connections, captured output. */
import { Effect, Option } from "effect"
import { sectionDefaults } from "../../src/config/load.js"
import { type TenantOptions, tenantSection } from "../../src/config/sections.js"
import { connect } from "../../src/tenant/connect.js"
import type { Output } from "../../src/tenant/run.js"
import { settingsFrom } from "../../src/tenant/settings.js"

/** Output that keeps what was shown: the JSON value and the text, for assertions on both. */
export const captureOutput = () => {
  const shown: Array<{ readonly value: unknown; readonly text: string }> = []
  const notes: Array<string> = []
  const out: Output = {
    json: false,
    show: (value, text) => Effect.sync(() => void shown.push({ value, text: text() })),
    note: (line) => Effect.sync(() => void notes.push(line))
  }
  return { out, shown, notes, last: () => shown[shown.length - 1]! }
}

/** Connections as `attest tenant` makes them, with [tenant] pointing at a test CA directory. */
export const tenantConnections = (o: {
  readonly caDir: string
  readonly registrar?: string
  readonly verifier?: string
  readonly ekCaDir?: string
  readonly requestTimeout?: number
  readonly options?: Partial<TenantOptions>
}) =>
  Effect.flatMap(
    settingsFrom(
      sectionDefaults(tenantSection, {
        tls_dir: o.caDir,
        ca_dir: o.caDir,
        ...(o.ekCaDir === undefined ? {} : { ek_ca_dir: o.ekCaDir }),
        request_timeout: o.requestTimeout ?? 60,
        ...o.options
      }),
      { registrar: Option.fromNullable(o.registrar), verifier: Option.fromNullable(o.verifier) }
    ),
    connect
  )
