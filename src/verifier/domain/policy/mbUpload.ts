/**
 * A measured-boot policy (reference state) as uploaded → what is stored. attest stores a JSON
 * object or nothing: Keylime also stores text that is not JSON (`ver-mbpolicy-add-invalid-json`),
 * which then fails every attestation that uses it; attest refuses it at upload instead. An absent,
 * null, "" or "null" policy is an empty one (Keylime's, and what agents added without one get).
 */
import * as crypto from "node:crypto"
import { Either, Schema } from "effect"
import { InvalidMbPolicy } from "../errors.js"
import type { MbPolicyData } from "../repo/PolicyRepo.js"

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

export const EMPTY_MB_POLICY: MbPolicyData = { mb_policy: null, checksum: "", has_policy: false, key_count: 0 }

export const isEmptyMbPolicyText = (text: string | null | undefined): boolean =>
  text === null || text === undefined || text.trim() === "" || text.trim() === "null"

export const prepareMbPolicy = (name: string, text: string | null | undefined, field = "mb_policy"): Either.Either<MbPolicyData, InvalidMbPolicy> => {
  if (isEmptyMbPolicyText(text)) return Either.right(EMPTY_MB_POLICY)
  const json = decodeJson(text)
  if (Either.isLeft(json)) return Either.left(new InvalidMbPolicy({ name, field, reason: "is not JSON" }))
  const doc = json.right
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    return Either.left(new InvalidMbPolicy({ name, field, reason: "must be a JSON object (the reference state)" }))
  }
  const keyCount = Object.keys(doc).length
  return Either.right({
    mb_policy: text!,
    checksum: crypto.createHash("sha256").update(text!, "utf8").digest("hex"),
    has_policy: keyCount > 0,
    key_count: keyCount
  })
}
