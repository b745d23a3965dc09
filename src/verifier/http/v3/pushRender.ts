/**
 * API 3.0 documents as the Rust push agent reads them (push-model.md §1.3-1.6): sessions, the 201
 * of phase 1, the 202 of phase 2, and the attestation state of GET. Timestamps are Keylime's
 * `isoformat(timespec="microseconds")`. Deliberate differences, each for the reader's sake:
 * attestation resources carry `id` (the index, which Keylime shows only in `links.self`), and the
 * state renders `evaluation`, `failure_reason` and `verification_completed_at` (stored and never
 * rendered, or never set, by Keylime).
 */
import type { EvidenceCollected, EvidenceRequested, EvidenceSupported } from "../../../../schemas/Push.js"
import { JSON_API_VERSION } from "../../../http/jsonapi.js"
import type { AttestationRow, SessionRow } from "../../domain/pushStore/rows.js"
import type { SessionOutcome } from "../../push/Sessions.js"
import { isoMicros } from "../../push/time.js"

const POP = { authentication_class: "pop", authentication_type: "tpm_pop" } as const

export const sessionCreatedDocument = (s: SessionRow) => ({
  data: {
    type: "session",
    id: s.session_id,
    attributes: {
      agent_id: s.agent_id,
      authentication_requested: [{ ...POP, chosen_parameters: { challenge: s.challenge } }],
      created_at: isoMicros(s.created_at),
      challenges_expire_at: isoMicros(s.challenges_expire_at)
    }
  }
})

export const sessionOutcomeDocument = (o: SessionOutcome) => {
  const s = o.session
  const base = {
    agent_id: s.agent_id,
    evaluation: o._tag === "Pass" ? "pass" : "fail",
    ...(o._tag === "Pass" && o.token !== undefined ? { token: o.token } : {}),
    authentication: [{ ...POP, chosen_parameters: { challenge: s.challenge }, ...(o._tag === "Pass" && o.proof !== undefined ? { data: o.proof } : {}) }],
    created_at: isoMicros(s.created_at),
    challenges_expire_at: isoMicros(s.challenges_expire_at),
    ...(s.response_received_at === null ? {} : { response_received_at: isoMicros(s.response_received_at) })
  }
  const expiry = o._tag === "Pass"
    ? { token_expires_at: s.token_expires_at === null ? null : isoMicros(s.token_expires_at) }
    : o.why === "challenge_expired"
    ? { token_expires_at: null }
    : {}
  return { data: { type: "session", id: s.session_id, attributes: { ...base, ...expiry } } }
}

/** `/v3.0` or `/v3`: the prefix the client used, for links and Location. */
export const versionPrefixOf = (requestPath: string): string => {
  const m = /^\/v3(?:\.\d+)?/.exec(requestPath)
  return m === null ? "/v3.0" : m[0]
}

export const attestationPath = (prefix: string, agentId: string, idx: number) => `${prefix}/agents/${agentId}/attestations/${idx}`

const parse = <A>(text: string | null, fallback: A): A => (text === null ? fallback : (JSON.parse(text) as A))

const systemInfo = (row: AttestationRow) => ({ boot_time: row.boot_time })

/** The 201 of phase 1 (render_evidence_requested). */
export const evidenceRequestedDocument = (row: AttestationRow, requested: ReadonlyArray<EvidenceRequested>, prefix: string, requestPath: string) => ({
  data: {
    type: "attestation",
    id: String(row.idx),
    attributes: {
      stage: row.stage,
      evidence_requested: requested,
      system_info: systemInfo(row),
      capabilities_received_at: isoMicros(row.capabilities_received_at),
      challenges_expire_at: isoMicros(row.challenges_expire_at)
    },
    links: { self: attestationPath(prefix, row.agent_id, row.idx) }
  },
  links: { self: requestPath },
  jsonapi: JSON_API_VERSION
})

/** Each requested item with what the agent offered, the verifier chose and the agent sent. */
const evidenceItems = (row: AttestationRow, requested: ReadonlyArray<EvidenceRequested>, known?: ReadonlyArray<EvidenceCollected>) => {
  const offered = parse<ReadonlyArray<EvidenceSupported>>(row.capabilities, [])
  const collected = known ?? parse<ReadonlyArray<EvidenceCollected>>(row.evidence, [])
  return requested.map((r, i) => ({
    evidence_class: r.evidence_class,
    evidence_type: r.evidence_type,
    capabilities: offered.find((o) => o.evidence_type === r.evidence_type)?.capabilities ?? {},
    chosen_parameters: r.chosen_parameters,
    data: collected[i]?.data ?? {}
  }))
}

const stateAttributes = (row: AttestationRow, requested: ReadonlyArray<EvidenceRequested>, collected?: ReadonlyArray<EvidenceCollected>) => ({
  stage: row.stage,
  evaluation: row.evaluation,
  failure_reason: row.failure_reason,
  evidence: evidenceItems(row, requested, collected),
  system_info: systemInfo(row),
  capabilities_received_at: isoMicros(row.capabilities_received_at),
  challenges_expire_at: isoMicros(row.challenges_expire_at),
  ...(row.evidence_received_at === null ? {} : { evidence_received_at: isoMicros(row.evidence_received_at) }),
  ...(row.verification_completed_at === null ? {} : { verification_completed_at: isoMicros(row.verification_completed_at) })
})

export const attestationResource = (row: AttestationRow, requested: ReadonlyArray<EvidenceRequested>, prefix: string, collected?: ReadonlyArray<EvidenceCollected>) => ({
  type: "attestation",
  id: String(row.idx),
  attributes: stateAttributes(row, requested, collected),
  links: { self: attestationPath(prefix, row.agent_id, row.idx) }
})

/** The 202 of phase 2 (render_evidence_acknowledged + meta); `collected` is the stored evidence as phase 2 decoded it. */
export const evidenceAcceptedDocument = (
  row: AttestationRow,
  requested: ReadonlyArray<EvidenceRequested>,
  prefix: string,
  secondsToNext: number,
  collected?: ReadonlyArray<EvidenceCollected>
) => ({
  data: attestationResource(row, requested, prefix, collected),
  meta: { seconds_to_next_attestation: secondsToNext },
  links: { self: attestationPath(prefix, row.agent_id, row.idx) },
  jsonapi: JSON_API_VERSION
})
