/**
 * `reglist`, `regstatus`, `regdelete`: the registrar's admin API (spec §4.2) through its typed
 * client. A registration that was never activated is listed as such (the registrar answers 404
 * "has not been activated" for its record).
 */
import { X509Certificate } from "node:crypto"
import { Effect, Either } from "effect"
import type { AgentRecord } from "../../schemas/Registrar.js"
import type { Connections } from "./connect.js"
import { UsageError } from "../config/usageError.js"
import { fields, table } from "./render.js"
import type { Output } from "./run.js"

export type RegistrarEntry =
  | { readonly agent_id: string; readonly active: true; readonly record: AgentRecord }
  | { readonly agent_id: string; readonly active: false; readonly reason: string }

/** The record of an active agent; a TenantError naming the agent otherwise. */
export const registrarRecord = (c: Connections, agentId: string) =>
  Effect.gen(function*() {
    const r = yield* c.registrar
    return yield* c.call("registrar", r.url, `registrar record of agent ${agentId}`, r.api.agents.show({ path: { agent_id: agentId as never } }))
  })

/** Every registration with its record (or why there is none), in the registrar's order. */
export const registrarEntries = (c: Connections) =>
  Effect.gen(function*() {
    const r = yield* c.registrar
    const { uuids } = yield* c.call("registrar", r.url, "list agents", r.api.agents.list())
    return yield* Effect.forEach(uuids, (id) =>
      registrarRecord(c, id).pipe(
        Effect.map((record): RegistrarEntry => ({ agent_id: id, active: true, record })),
        Effect.catchIf((e) => e.status === 404, (e) => Effect.succeed<RegistrarEntry>({ agent_id: id, active: false, reason: e.message.replace(/^.*answered 404: /, "") }))
      ), { concurrency: 8 })
  })

const certSubject = (pem: string | null): string => {
  if (pem === null || pem === "disabled") return pem ?? "none"
  return Either.match(Either.try(() => new X509Certificate(pem)), {
    onLeft: () => "(unreadable certificate)",
    onRight: (x) => `${x.subject.replace(/\n/g, ", ")} (until ${new Date(x.validTo).toISOString().slice(0, 10)})`
  })
}

const ekSubject = (b64: string | null): string => {
  if (b64 === null) return "none (EK public key only)"
  return Either.match(Either.try(() => new X509Certificate(Buffer.from(b64, "base64"))), {
    onLeft: () => "(unreadable certificate)",
    onRight: (x) => `issued by ${x.issuer.replace(/\n/g, ", ") || "(empty issuer)"}`
  })
}

export const reglist = (c: Connections, out: Output) =>
  Effect.gen(function*() {
    const entries = yield* registrarEntries(c)
    yield* out.show(
      { uuids: entries.map((e) => e.agent_id), agents: entries.map((e) => e.active ? { agent_id: e.agent_id, active: true, ip: e.record.ip, port: e.record.port, regcount: e.record.regcount } : { agent_id: e.agent_id, active: false }) },
      () =>
        entries.length === 0
          ? "no agents registered"
          : table(
            ["agent", "active", "address", "registrations"],
            entries.map((e) =>
              e.active
                ? [e.agent_id, "yes", e.record.ip === null ? "-" : `${e.record.ip}:${e.record.port ?? "-"}`, String(e.record.regcount)]
                : [e.agent_id, "no", "-", "-"]
            )
          )
    )
  })

export const regstatus = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const record = yield* registrarRecord(c, agentId)
    yield* out.show(record, () =>
      fields([
        ["agent", record.agent_id],
        ["address", record.ip === null ? "-" : `${record.ip}:${record.port ?? "-"}`],
        ["registrations", String(record.regcount)],
        ["EK certificate", ekSubject(record.ekcert)],
        ["AK (TPM2B_PUBLIC)", `${Buffer.from(record.aik_tpm, "base64").length} bytes`],
        ["mTLS certificate", certSubject(record.mtls_cert)]
      ]))
  })

export const regdelete = (c: Connections, out: Output, agentId: string) =>
  Effect.gen(function*() {
    const r = yield* c.registrar
    yield* c.call("registrar", r.url, `delete agent ${agentId}`, r.api.agents.remove({ path: { agent_id: agentId as never } }))
    yield* out.show({ agent_id: agentId, deleted: true }, () => `agent ${agentId} deleted from the registrar`)
  })

/** An agent id given on the command line: the registrar's rule, checked before any request (a usage error). */
export const checkAgentId = (id: string): Effect.Effect<string, UsageError> =>
  /^[A-Za-z0-9._-]{1,255}$/.test(id)
    ? Effect.succeed(id)
    : Effect.fail(new UsageError({ message: `--uuid ${id}: an agent id is 1-255 letters, digits, '-', '_' or '.'` }))
