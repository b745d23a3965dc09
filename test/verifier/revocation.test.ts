/**
 * The revocation message is byte-for-byte the JSON Keylime's verifier sent to the mock agent
 * (keylime-wire.md §6), and its RSA-PSS signature is what the attest agent's existing check
 * (src/agent/revocation.ts) accepts with the matching certificate and refuses when tampered.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Redacted } from "effect"
import * as crypto from "node:crypto"
import { checkRevocation } from "../../src/agent/revocation.js"
import { issueCertificate, toPem } from "../../src/pki/certificate.js"
import { asctime, revocationBody, type RevocationInput, revocationMessage, signRevocation } from "../../src/attestation/revocation.js"

/** The body the mock agent received from Keylime (keylime-wire.md §6). */
const OBSERVED_MSG =
  "{\"type\": \"revocation\", \"ip\": \"127.0.0.1\", \"agent_id\": \"33333333-d2f1-4a97-9ef7-75bd81c00000\", \"port\": 9002, " +
  "\"tpm_policy\": \"{\\\"mask\\\": \\\"0x400\\\"}\", \"meta_data\": \"{}\", \"event_time\": \"Sat Nov 21 20:52:06 2026\", " +
  "\"event_id\": \"ima.pcr_mismatch\", \"severity_label\": \"emergency\", " +
  "\"context\": \"{\\\"message\\\": \\\"IMA measurement list does not match TPM PCR 7e99...\\\"}\"}"

const input: RevocationInput = {
  type: "revocation",
  agent: { agentId: "33333333-d2f1-4a97-9ef7-75bd81c00000", ip: "127.0.0.1", port: 9002, tpmPolicy: "{\"mask\": \"0x400\"}", metaData: "{}" },
  at: Date.UTC(2026, 10, 21, 20, 52, 6),
  event: {
    eventId: "ima.pcr_mismatch",
    severityLabel: "emergency",
    context: { message: "IMA measurement list does not match TPM PCR 7e99..." }
  }
}

const revocationKeys = () => {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
  const der = Either.getOrThrow(issueCertificate({
    subject: { CN: "RevocationNotifier" },
    publicKey,
    signingKey: privateKey,
    notBefore: new Date(Date.UTC(2026, 0, 1)),
    notAfter: new Date(Date.UTC(2036, 0, 1))
  }))
  return { keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), certPem: toPem(der) }
}

describe("revocation message", () => {
  it("is the JSON text Keylime sends: key order, separators, context as a JSON string", () => {
    expect(revocationMessage(input)).toBe(OBSERVED_MSG)
  })

  it("writes event_time as C asctime (day padded with a space)", () => {
    expect(asctime(Date.UTC(2026, 10, 21, 20, 52, 6))).toBe("Sat Nov 21 20:52:06 2026")
    expect(asctime(Date.UTC(2026, 10, 1, 8, 5, 9))).toBe("Sun Nov  1 08:05:09 2026")
  })

  it("has no event fields for a message without an event, and escapes non-ASCII as json.dumps does", () => {
    const msg = revocationMessage({ type: "comm_error", agent: { ...input.agent, metaData: "{\"cert\": \"é\"}" }, at: 0 })
    expect(msg).toBe(
      "{\"type\": \"comm_error\", \"ip\": \"127.0.0.1\", \"agent_id\": \"33333333-d2f1-4a97-9ef7-75bd81c00000\", \"port\": 9002, " +
        "\"tpm_policy\": \"{\\\"mask\\\": \\\"0x400\\\"}\", \"meta_data\": \"{\\\"cert\\\": \\\"\\u00e9\\\"}\", \"event_time\": \"Thu Jan  1 00:00:00 1970\"}"
    )
  })

  it("is signed so that the attest agent accepts it with the matching certificate", () => {
    const { keyPem, certPem } = revocationKeys()
    const body = Either.getOrThrow(revocationBody(input, Redacted.make(keyPem)))
    expect(body.msg).toBe(OBSERVED_MSG)
    const checked = checkRevocation(body, certPem)
    expect(Either.isRight(checked)).toBe(true)
    if (Either.isRight(checked)) {
      expect(checked.right.signed).toBe(true)
      expect(checked.right.event).toMatchObject({ type: "revocation", event_id: "ima.pcr_mismatch", severity_label: "emergency" })
    }
  })

  it("is refused by the agent when the message or the signature is altered, or signed by another key", () => {
    const { keyPem, certPem } = revocationKeys()
    const body = Either.getOrThrow(revocationBody(input, keyPem))
    const tampered = checkRevocation({ ...body, msg: body.msg.replace("emergency", "info") }, certPem)
    expect(Either.isLeft(tampered) && tampered.left.message).toBe("Invalid revocation message signature")
    const sig = Buffer.from(body.signature, "base64")
    sig[10] = sig[10]! ^ 1
    const flipped = checkRevocation({ ...body, signature: sig.toString("base64") }, certPem)
    expect(Either.isLeft(flipped) && flipped.left.message).toBe("Invalid revocation message signature")
    const other = revocationKeys()
    const foreign = checkRevocation(Either.getOrThrow(revocationBody(input, other.keyPem)), certPem)
    expect(Either.isLeft(foreign) && foreign.left.message).toBe("Invalid revocation message signature")
  })

  it("is unsigned (\"\") when the agent has no revocation key: accepted only by agents without a certificate", () => {
    const body = Either.getOrThrow(revocationBody(input, ""))
    expect(body.signature).toBe("")
    expect(Either.isRight(checkRevocation(body, undefined))).toBe(true)
    const withCert = checkRevocation(body, revocationKeys().certPem)
    expect(Either.isLeft(withCert) && withCert.left.message).toBe("Revocation message is not signed")
  })

  it("refuses a key that cannot sign RSA-PSS, naming the agent", () => {
    const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    const e = signRevocation("a1", "msg", ec)
    expect(Either.isLeft(e) && e.left.message).toBe("agent a1: revocation_key is a ec key; revocation messages are signed with RSA-PSS")
    const garbage = signRevocation("a1", "msg", "not a key")
    expect(Either.isLeft(garbage) && garbage.left.message).toBe("agent a1: revocation_key is not a private key in PEM")
  })
})
