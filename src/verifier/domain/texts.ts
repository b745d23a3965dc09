/**
 * The verifier API's status texts: Keylime's exact words wherever a recorded exchange
 * (../shared/vectors/keylime-wire/verifier.jsonl) or keylime-wire.md §1.4 shows them, and attest's
 * own field-naming words where Keylime has none or only a Python exception dump that helps nobody.
 * This is the one table; each Http.ts picks the status code and the text for a domain error here.
 */
import { AGENT_ID_RULE } from "../../../schemas/Common.js"
import type { InvalidAgentBody, InvalidMbPolicy, InvalidRuntimePolicy } from "./errors.js"

/** Python's repr() of a str, for the few texts that quote a value the way Keylime's exceptions do. */
export const pythonRepr = (s: string): string => {
  const quote = s.includes("'") && !s.includes("\"") ? "\"" : "'"
  let out = quote
  for (const ch of s) {
    const c = ch.codePointAt(0)!
    if (ch === "\\") out += "\\\\"
    else if (ch === quote) out += `\\${quote}`
    else if (ch === "\n") out += "\\n"
    else if (ch === "\r") out += "\\r"
    else if (ch === "\t") out += "\\t"
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, "0")}`
    else out += ch
  }
  return out + quote
}

/** What Python's int() accepts (so its "invalid literal" text applies to everything else). */
const PY_INT = /^\s*[+-]?\d+(?:_\d+)*\s*$/

export const VerifierText = {
  success: "Success",
  created: "Created",
  accepted: "Accepted",
  badRequest: "Bad Request",

  // --- agents -----------------------------------------------------------------------------------
  /** Path id with characters Keylime's validator refuses (Keylime's own text repeats the word "not"; attest's names the rule). */
  badAgentId: `agent_id not valid: an agent id ${AGENT_ID_RULE}`,
  agentNotFound: "agent id not found",
  /** DELETE of an agent another verifier (verifier_id) polls. */
  agentOfOtherVerifier: "agent id associated to this verifier",
  agentExists: (agentId: string) => `Agent of uuid ${agentId} already exists. Please use delete or update.`,
  /** stop / reactivate of an unknown id: Keylime's SQLAlchemy text with status 400 (recorded). */
  noRow: "Exception error: No row was found when one was required",
  agentBeingDeleted: (agentId: string) => `Agent ${agentId} is being deleted (operational_state 8); it cannot be reactivated`,
  emptyBody: "Expected non zero content length",
  missingField: (field: string) => `Exception error: '${field}'`,
  /** A missing or null `runtime_policy` (Keylime's b64decode(None) TypeError, recorded twice). */
  runtimePolicyNone: "Exception error: argument should be a bytes-like object or ASCII string, not 'NoneType'",
  /** A `cloudagent_port` string Python's int() refuses (recorded for "x"). */
  portNotInteger: (value: string) => `Exception error: invalid literal for int() with base 10: ${pythonRepr(value)}`,
  /** Keylime's json.loads text for a document that cannot start a JSON value (recorded). */
  jsonExpectingValue: (line: number, column: number, char: number) =>
    `Exception error: Expecting value: line ${line} column ${column} (char ${char})`,
  mtlsRequired: "mTLS certificate for agent is required!",
  imaPolicyExists: (name: string) =>
    `IMA policy with name ${name} already exists. Please use a different name or delete the allowlist from the verifier.`,
  imaPolicyNotFound: (name: string) => `Could not find IMA policy with name ${name}!`,
  mbPolicyExistsOnAdd: (name: string) =>
    `mb_policy with name ${name} already exists. Please use a different name or delete the mb_policy from the verifier.`,
  mbPolicyNotFoundOnAdd: (name: string) => `Could not find mb_policy with name ${name}!`,
  uriNotSupported: "uri not supported",
  apiVersionNotSupported: "API Version not supported",

  // --- runtime policies (allowlists) --------------------------------------------------------------
  runtimePolicyExists: (name: string) => `Runtime policy with name ${name} already exists`,
  runtimePolicyNotFound: (name: string) => `Runtime policy ${name} not found`,
  runtimePolicyUpdateUnknown: (name: string) => `Runtime policy with name ${name} does not already exist, use POST to create`,
  runtimePolicyInUse: (agentId: string) => `Can't delete allowlist as it's currently in use by agent ${agentId}`,
  runtimePolicyNotJson: "Runtime policy is not valid JSON!",
  runtimePolicyKeyRequired: "Runtime policy signature verification required but no key was given!",
  runtimePolicyBadSignature: "Runtime policy failed DSSE signature verification!",
  runtimePolicyNotSigned: "Runtime policy is not signed!",
  runtimePolicyMalformatted: (detail: string) => `Runtime policy is malformatted: ${detail}`,

  // --- measured-boot policies ---------------------------------------------------------------------
  mbPolicyExists: (name: string) => `Measured boot policy with name ${name} already exists`,
  mbPolicyNotFound: (name: string) => `Measured boot policy ${name} not found`,
  /** PUT of an unknown mb policy: Keylime answers 409 with this (recorded). */
  mbPolicyUpdateUnknown: (name: string) => `Measured boot policy with name ${name} does not already exist`,
  mbPolicyInUse: (agentId: string) => `Can't delete mb_policy as it's currently in use by agent ${agentId}`,

  // --- verify/identity and verify/evidence --------------------------------------------------------
  missingQueryParameter: (name: string) => `missing query parameter '${name}'`,
  missingParameter: (name: string) => `missing parameter '${name}'`,
  invalidEvidenceType: "invalid evidence type",
  /** `context.message` of a `default.missing_param` failure (double quotes, as recorded). */
  missingEvidenceParameter: (name: string) => `missing parameter "${name}"`,
  missingEvidencePolicy: "at least one policy (tpm_policy, runtime_policy, or mb_policy) must be provided",

  // --- authorization (Keylime's JSON:API 403 `detail`; attest answers with its envelope) ---------
  adminRequired: (action: string) => `Action ${action} requires admin authentication (mTLS certificate)`,
  authenticationRequired: (action: string) => `Action ${action} requires authentication`
} as const

/** Keylime's action names (403 texts and logs), per verifier operation. */
export const VerifierAction = {
  listAgents: "list_agents",
  readAgent: "read_agent",
  createAgent: "create_agent",
  deleteAgent: "delete_agent",
  stopAgent: "stop_agent",
  reactivateAgent: "reactivate_agent",
  listRuntimePolicies: "list_runtime_policies",
  readRuntimePolicy: "read_runtime_policy",
  createRuntimePolicy: "create_runtime_policy",
  updateRuntimePolicy: "update_runtime_policy",
  deleteRuntimePolicy: "delete_runtime_policy",
  listMbPolicies: "list_mb_policies",
  readMbPolicy: "read_mb_policy",
  createMbPolicy: "create_mb_policy",
  updateMbPolicy: "update_mb_policy",
  deleteMbPolicy: "delete_mb_policy"
} as const

/**
 * The text of a refused creation-body field: Keylime's where a recorded exchange fixes it (missing
 * keys, a null runtime policy, a non-numeric port, the mTLS rule), attest's `<field> <reason>`
 * otherwise.
 */
export const invalidAgentBodyText = (e: InvalidAgentBody): string => {
  switch (e.problem) {
    case "missing":
      return e.field === "runtime_policy" ? VerifierText.runtimePolicyNone : VerifierText.missingField(e.field)
    case "mtls_required":
      return VerifierText.mtlsRequired
    case "not_an_integer":
      return typeof e.value === "string" && !PY_INT.test(e.value) ? VerifierText.portNotInteger(e.value) : `${e.field} ${e.reason}`
    case "not_json":
      return e.jsonPosition !== undefined
        ? VerifierText.jsonExpectingValue(e.jsonPosition.line, e.jsonPosition.column, e.jsonPosition.char)
        : `${e.field} ${e.reason}`
    case "invalid":
      return `${e.field} ${e.reason}`
  }
}

/** Runtime-policy upload or inline-policy refusals (Keylime's ImaValidationError texts). */
export const invalidRuntimePolicyText = (e: InvalidRuntimePolicy): string => {
  switch (e.problem) {
    case "not_json":
      return VerifierText.runtimePolicyNotJson
    case "key_required":
      return VerifierText.runtimePolicyKeyRequired
    case "bad_signature":
      return VerifierText.runtimePolicyBadSignature
    case "not_signed":
      return VerifierText.runtimePolicyNotSigned
    case "malformatted":
      return VerifierText.runtimePolicyMalformatted(e.keylimeDetail ?? `${e.field}: ${e.reason}`)
    case "invalid":
      return `${e.field} ${e.reason}`
  }
}

/** Keylime's ImaValidationError codes: signature problems are 401, the rest 400. */
export const invalidRuntimePolicyStatus = (e: InvalidRuntimePolicy): 400 | 401 =>
  e.problem === "key_required" || e.problem === "bad_signature" ? 401 : 400

export const invalidMbPolicyText = (e: InvalidMbPolicy): string => `${e.field} ${e.reason}`
