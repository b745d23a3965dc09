/**
 * API 3.0 administration resources (spec §4.4): an agent is its v2 status in the API 2.6 shape
 * (the push status overlaid for a push agent, as GET /v2.6/agents/:id shows it; without V) plus its policy
 * names and a `push` block (null for a pull agent); an IMA policy and a UEFI reference state are
 * their v2 GET results under their names. Every resource links to itself. Pure.
 */
import type { MbPolicyResponse, RuntimePolicyResponse } from "../../../../schemas/Verifier.js"
import { V3Type } from "../../../../schemas/V3Admin.js"
import { JSON_API_VERSION } from "../../../http/jsonapi.js"
import type { AgentRecord } from "../../domain/AgentAdmin.js"
import { renderAgentStatus, type RenderSettings } from "../../domain/agentStatus.js"
import { withPushStatus } from "../../domain/pushStore/pushStatus.js"
import { isoMicros } from "../../push/time.js"

const STATUS_VERSION = { major: 2, minor: 6 } as const

export const agentPath = (prefix: string, agentId: string) => `${prefix}/agents/${agentId}`
export const imaPolicyPath = (prefix: string, name: string) => `${prefix}/policies/ima/${name}`
export const uefiRefstatePath = (prefix: string, name: string) => `${prefix}/refstates/uefi/${name}`

export const agentResource = (r: AgentRecord, settings: RenderSettings, prefix: string) => {
  const p = r.push
  const rendered = renderAgentStatus(r.view, STATUS_VERSION, settings)
  // V (half of the bootstrap key) is not shown: this API has no older client to stay compatible with
  const { v: _v, ...status } = p === undefined ? rendered : withPushStatus(rendered, p)
  return {
    type: V3Type.agent,
    id: r.view.agent_id,
    attributes: {
      ...status,
      runtime_policy_name: r.view.runtime_policy_name,
      mb_policy_name: r.view.mb_policy_name,
      push: p === undefined ? null : {
        accept_attestations: p.accept_attestations,
        consecutive_attestation_failures: p.consecutive_failures,
        last_received_attestation: p.last_received_at === null ? null : isoMicros(p.last_received_at),
        attestation_deadline: p.deadline_at === null ? null : isoMicros(p.deadline_at),
        latest_attestation: r.latest === undefined
          ? null
          : { index: r.latest.idx, stage: r.latest.stage, evaluation: r.latest.evaluation, failure_reason: r.latest.failure_reason }
      }
    },
    links: { self: agentPath(prefix, r.view.agent_id) }
  }
}

/**
 * An IMA policy resource; `withText` false leaves the policy text out (the answer to a create or
 * update: the client has just sent those megabytes, and escaping them into the answer cost ~0.4×
 * the policy's whole load; GET returns them).
 */
export const imaPolicyResource = (p: RuntimePolicyResponse, prefix: string, withText = true) => ({
  type: V3Type.imaPolicy,
  id: p.name,
  attributes: withText ? { runtime_policy: p.runtime_policy, tpm_policy: p.tmp_policy } : { tpm_policy: p.tmp_policy },
  links: { self: imaPolicyPath(prefix, p.name) }
})

export const uefiRefstateResource = (p: MbPolicyResponse, prefix: string) => ({
  type: V3Type.uefiRefstate,
  id: p.name,
  attributes: { mb_policy: p.mb_policy },
  links: { self: uefiRefstatePath(prefix, p.name) }
})

/** A list entry of a policy: its name and link (the texts may be megabytes: GET the resource). */
export const nameResource = (type: string, name: string, self: string) => ({ type, id: name, attributes: {}, links: { self } })

/** A document of one resource or a list. */
export const documentOf = (data: unknown, requestPath: string) => ({ data, links: { self: requestPath }, jsonapi: JSON_API_VERSION })
