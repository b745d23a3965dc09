/**
 * The revocation message (keylime-wire.md §6): a JSON object `{type, ip, agent_id, port,
 * tpm_policy, meta_data, event_time, event_id, severity_label, context}` written as Python's
 * json.dumps writes it (the signature covers this exact text), sent as `{msg, signature}` with
 * `signature` = base64 RSA-PSS(SHA-256, MGF1-SHA-256, maximum salt) over `msg` with the agent's
 * `revocation_key`, or "" when the agent has none. `event_time` is C asctime in UTC (Keylime writes
 * the verifier's local time). Pure: the time is an argument.
 */
import * as crypto from "node:crypto"
import { Data, Either, Redacted } from "effect"
import { pythonJsonDumps } from "./pythonJson.js"

export type RevocationType = "revocation" | "comm_error"

export interface RevocationAgent {
  readonly agentId: string
  readonly ip: string
  readonly port: number
  readonly tpmPolicy: string
  readonly metaData: string
}

export interface RevocationEventInfo {
  readonly eventId: string
  readonly severityLabel: string
  /** The failure's context (`{message, …}`); sent as its JSON text. */
  readonly context: Readonly<Record<string, unknown>>
}

export interface RevocationInput {
  readonly type: RevocationType
  readonly agent: RevocationAgent
  /** Epoch milliseconds of the event. */
  readonly at: number
  readonly event?: RevocationEventInfo | undefined
}

/** What is POSTed to a notifier: the message text and its signature. */
export interface RevocationBody {
  readonly msg: string
  readonly signature: string
}

export class RevocationKeyError extends Data.TaggedError("RevocationKeyError")<{
  readonly agentId: string
  readonly reason: string
}> {
  override get message(): string {
    return `agent ${this.agentId}: revocation_key ${this.reason}`
  }
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const two = (n: number) => String(n).padStart(2, "0")

/** C asctime() in UTC, without the newline: "Sat Nov 21 20:52:06 2026", "Sun Nov  1 08:05:09 2026". */
export const asctime = (epochMillis: number): string => {
  const d = new Date(epochMillis)
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, " ")} ` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} ${d.getUTCFullYear()}`
}

/** The `msg` text, key order and separators as Keylime's json.dumps writes them. */
export const revocationMessage = (input: RevocationInput): string => {
  const a = input.agent
  const message: Record<string, unknown> = {
    type: input.type,
    ip: a.ip,
    agent_id: a.agentId,
    port: a.port,
    tpm_policy: a.tpmPolicy,
    meta_data: a.metaData,
    event_time: asctime(input.at)
  }
  if (input.event !== undefined) {
    message["event_id"] = input.event.eventId
    message["severity_label"] = input.event.severityLabel
    message["context"] = pythonJsonDumps(input.event.context)
  }
  return pythonJsonDumps(message)
}

/** base64 RSA-PSS(SHA-256, MGF1-SHA-256, maximum salt) over the UTF-8 message. */
export const signRevocation = (
  agentId: string,
  msg: string,
  revocationKeyPem: string
): Either.Either<string, RevocationKeyError> => {
  const key = Either.try({
    try: () => crypto.createPrivateKey(revocationKeyPem),
    catch: () => new RevocationKeyError({ agentId, reason: "is not a private key in PEM" })
  })
  if (Either.isLeft(key)) return Either.left(key.left)
  if (key.right.asymmetricKeyType !== "rsa") {
    return Either.left(new RevocationKeyError({ agentId, reason: `is a ${key.right.asymmetricKeyType} key; revocation messages are signed with RSA-PSS` }))
  }
  return Either.try({
    try: () =>
      crypto.sign("sha256", Buffer.from(msg, "utf8"), {
        key: key.right,
        padding: crypto.constants.RSA_PKCS1_PSS_PADDING,
        saltLength: crypto.constants.RSA_PSS_SALTLEN_MAX_SIGN
      }).toString("base64"),
    catch: (cause) => new RevocationKeyError({ agentId, reason: `cannot sign: ${String(cause)}` })
  })
}

/** The body to send: the message, signed with the agent's revocation key ("" key: unsigned). */
export const revocationBody = (
  input: RevocationInput,
  revocationKey: Redacted.Redacted<string> | string
): Either.Either<RevocationBody, RevocationKeyError> => {
  const msg = revocationMessage(input)
  const pem = typeof revocationKey === "string" ? revocationKey : Redacted.value(revocationKey)
  if (pem === "") return Either.right({ msg, signature: "" })
  return Either.map(signRevocation(input.agent.agentId, msg, pem), (signature) => ({ msg, signature }))
}
