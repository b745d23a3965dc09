/** Helpers for the tenant suites: settings from a test CA directory, connections, captured output. */
import { Effect, Either, Option, Schedule } from "effect"
import { encryptForAgent } from "../../src/keys/index.js"
import type { Connections } from "../../src/tenant/connect.js"
import { request } from "../agent/support.js"
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

/**
 * The poller's PROVIDE_V step, standing in until the poller exists: once the verifier holds the
 * agent, its stored V (or `wrongV`) wrapped for the agent's NK goes to the agent's keys/vkey.
 */
export const deliverVTo = (
  c: Connections,
  agent: { readonly url: string; readonly serverCert: string },
  admin: { readonly cert: string; readonly key: string },
  agentId: string,
  wrongV?: Uint8Array
) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    const s = yield* v.api.agents.show({ path: { agent_id: agentId } }).pipe(
      Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo("60 seconds")))
    )
    const pubkey = yield* request(agent, admin, "GET", "/v2.6/keys/pubkey")
    const vBytes = wrongV ?? new Uint8Array(Buffer.from(s.v!, "base64"))
    const wrapped = Either.getOrThrow(encryptForAgent(pubkey.body.results.pubkey, vBytes))
    const r = yield* request(agent, admin, "POST", "/v2.6/keys/vkey", { encrypted_key: Buffer.from(wrapped).toString("base64") })
    if (r.status !== 200) return yield* Effect.dieMessage(`keys/vkey answered ${r.status}: ${JSON.stringify(r.body)}`)
  })

/** `tenant list --json`'s entry of a pull agent just added (state Start, no quote yet), registered and active. */
export const justAddedListEntry = (agentId: string) => ({
  agent_id: agentId,
  verifier: {
    attestation_model: "pull",
    operational_state: 1,
    state: "Start (1)",
    attestation_status: "PENDING",
    verdict: "pending",
    attestation_count: 0,
    last_successful_attestation: 0,
    last_event_id: null,
    last_failure: null
  },
  registrar: { active: true }
})
