/**
 * Who may call each route of the verifier (spec §5.2, §7.3): the action named to the authorization
 * provider, its class, and the path parameter naming the owning agent. Complete by type for every
 * group behind V2Authorization or V3Authorization (http/authorization.ts); GET / (the redirect to
 * /v3.0/) and the unversioned documents are served to anyone without asking the provider.
 */
import { adminOperation, agentOperation, agentOrAdminOperation, operationTable, publicOperation } from "../../http/operations.js"
import { VerifierApi } from "./Api.js"
import { VerifierAction as A } from "../domain/texts.js"

export const verifierOperations = operationTable(VerifierApi, {
  version: { version: publicOperation("get_version"), versions: publicOperation("get_version") },
  agents: {
    list: adminOperation(A.listAgents),
    show: agentOrAdminOperation(A.readAgent, "agent_id"),
    add: adminOperation(A.createAgent),
    remove: adminOperation(A.deleteAgent),
    stop: adminOperation(A.stopAgent),
    reactivate: adminOperation(A.reactivateAgent)
  },
  allowlists: {
    list: adminOperation(A.listRuntimePolicies),
    show: adminOperation(A.readRuntimePolicy),
    add: adminOperation(A.createRuntimePolicy),
    update: adminOperation(A.updateRuntimePolicy),
    remove: adminOperation(A.deleteRuntimePolicy),
    removeSingular: adminOperation(A.deleteRuntimePolicy)
  },
  mbpolicies: {
    list: adminOperation(A.listMbPolicies),
    show: adminOperation(A.readMbPolicy),
    add: adminOperation(A.createMbPolicy),
    update: adminOperation(A.updateMbPolicy),
    remove: adminOperation(A.deleteMbPolicy)
  },
  verify: { identity: publicOperation("verify_identity"), evidence: publicOperation("verify_evidence") },
  push: {
    root: publicOperation("get_api_root"),
    // the session routes check an agent's proof or token themselves (push/Sessions.ts)
    createSession: publicOperation("create_session"),
    updateSession: publicOperation("update_session"),
    createAttestation: agentOperation("submit_attestation", "agent_id"),
    submitEvidence: agentOperation("submit_attestation", "agent_id"),
    listAttestations: adminOperation("list_attestations"),
    showAttestation: adminOperation("read_attestation")
  },
  v3admin: {
    listAgents: adminOperation(A.listAgents),
    createAgent: adminOperation(A.createAgent),
    showAgent: agentOrAdminOperation(A.readAgent, "agent_id"),
    updateAgent: adminOperation("update_agent"),
    deleteAgent: adminOperation(A.deleteAgent),
    stopAgent: adminOperation(A.stopAgent),
    reactivateAgent: adminOperation(A.reactivateAgent),
    listImaPolicies: adminOperation(A.listRuntimePolicies),
    createImaPolicy: adminOperation(A.createRuntimePolicy),
    showImaPolicy: adminOperation(A.readRuntimePolicy),
    updateImaPolicy: adminOperation(A.updateRuntimePolicy),
    deleteImaPolicy: adminOperation(A.deleteRuntimePolicy),
    listUefiRefstates: adminOperation(A.listMbPolicies),
    createUefiRefstate: adminOperation(A.createMbPolicy),
    showUefiRefstate: adminOperation(A.readMbPolicy),
    updateUefiRefstate: adminOperation(A.updateMbPolicy),
    deleteUefiRefstate: adminOperation(A.deleteMbPolicy)
  }
})
