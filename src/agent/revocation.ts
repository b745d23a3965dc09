/**
 * Revocation notifications from the verifier (keylime-wire.md §6): body `{msg, signature}` where
 * `msg` is the JSON event as a string and `signature` the base64 RSA-PSS(SHA-256, MGF1-SHA-256)
 * signature over it with the revocation key. Checked when a revocation certificate is configured.
 */
import { constants, verify, X509Certificate } from "node:crypto"
import { Either, Schema } from "effect"
import type { RevocationNotice } from "../../schemas/Agent.js"
import { type AgentRequestError, badRequest } from "./errors.js"


export const RevocationEvent = Schema.Struct({
  type: Schema.optional(Schema.String),
  agent_id: Schema.optional(Schema.String),
  event_id: Schema.optional(Schema.String),
  severity_label: Schema.optional(Schema.String),
  event_time: Schema.optional(Schema.String),
  context: Schema.optional(Schema.Unknown)
})
export type RevocationEvent = typeof RevocationEvent.Type

const decodeEvent = Schema.decodeUnknownEither(Schema.parseJson(RevocationEvent))

export const checkRevocation = (
  body: RevocationNotice,
  certificatePem: string | undefined
): Either.Either<{ readonly event: RevocationEvent; readonly signed: boolean }, AgentRequestError> => {
  if (certificatePem !== undefined) {
    const sig = body.signature ?? ""
    if (sig === "") return Either.left(badRequest("Revocation message is not signed"))
    const ok = Either.try(() =>
      verify("sha256", Buffer.from(body.msg, "utf8"), {
        key: new X509Certificate(certificatePem).publicKey,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: constants.RSA_PSS_SALTLEN_AUTO
      }, Buffer.from(sig, "base64"))
    )
    if (Either.isLeft(ok) || !ok.right) return Either.left(badRequest("Invalid revocation message signature"))
  }
  return Either.match(decodeEvent(body.msg), {
    onLeft: () => Either.left(badRequest("Revocation message is not a JSON object")),
    onRight: (event) => Either.right({ event, signed: certificatePem !== undefined })
  })
}
