/**
 * The identity quote check before U is sent (Keylime `tenant.py` `validate_tpm_quote`): the quote
 * from `GET quotes/identity?nonce=` must be signed by the AK the registrar holds for the agent, over
 * that nonce, and its PCR 16 must hold H(0 ‖ H(NK PEM)) for the `pubkey` it came with, so the key U
 * is encrypted to lives in that TPM's machine. Pure.
 */
import { Either } from "effect"
import type { IdentityQuote } from "../../schemas/Agent.js"
import type { HashAlg } from "../tpm/hashAlg.js"
import { verifyQuoteString } from "../tpm/verifyQuote.js"
import { nkPcrValue } from "../attestation/evaluate/pcrs.js"
import { TenantError } from "./errors.js"

const DATA_PCR = 16
const HASHES: ReadonlyArray<HashAlg> = ["sha1", "sha256", "sha384", "sha512"]

const refuse = (agentId: string, reason: string) =>
  new TenantError({ service: "agent", message: `agent ${agentId}: identity quote refused: ${reason}` })

/** Right(NK PEM) when the quote is the registered AK's over `nonce` and PCR 16 binds the NK. */
export const checkIdentityQuote = (
  agentId: string,
  akTpm: Uint8Array,
  nonce: string,
  q: IdentityQuote
): Either.Either<string, TenantError> => {
  const hash = HASHES.find((h) => h === q.hash_alg)
  if (hash === undefined) return Either.left(refuse(agentId, `hash_alg ${q.hash_alg} is not one the tenant can check (sha1, sha256, sha384, sha512)`))
  const verified = verifyQuoteString(akTpm, q.quote, new Uint8Array(Buffer.from(nonce, "utf8")), { hashAlg: hash })
  if (Either.isLeft(verified)) {
    return Either.left(refuse(agentId, `${verified.left.message} (is the agent using the AK it registered?)`))
  }
  const bank = verified.right.pcrs.find((b) => b.hash === hash)
  const pcr16 = bank?.values.get(DATA_PCR)
  if (pcr16 === undefined) return Either.left(refuse(agentId, `PCR ${DATA_PCR} is not in the quote`))
  const expected = Buffer.from(nkPcrValue(hash, q.pubkey))
  if (!expected.equals(pcr16)) {
    return Either.left(refuse(agentId, `PCR ${DATA_PCR} is ${Buffer.from(pcr16).toString("hex")}, not H(0 ‖ H(NK)) = ${expected.toString("hex")}: the NK it sent is not the one bound in its TPM`))
  }
  return Either.right(q.pubkey)
}
