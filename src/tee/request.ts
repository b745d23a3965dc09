/**
 * The `data` of a `type: "tee"` evidence request, checked field by field so every problem is one
 * failure naming the field: absent, null or empty required fields are `tee_attestation.missing_param`; malformed
 * ones `tee_attestation.invalid_input`; a TEE other than "snp" `tee_attestation.invalid.tee`; TEE key coordinates that are not
 * a curve point `tee_attestation.invalid_public_key`. Field schemas are those of schemas/Evidence.ts.
 */
import { Either, ParseResult, Schema } from "effect"
import { base64Bytes } from "../crypto/encoding.js"
import { type Failure, makeFailure, SnpPolicy, TeeBase64, UrlBase64NoPad } from "../../schemas/Evidence.js"
import { TEE_FAILURE } from "./failures.js"
import type { SnpEvidenceInput } from "./snp/verify.js"
import { teeKeyCurve } from "./teeKey.js"

export type TeeRequest = { readonly tee: "snp"; readonly snp: SnpEvidenceInput }

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null && !Array.isArray(v)
const present = (v: unknown): boolean => v !== undefined && v !== null && v !== ""

const decoders = {
  base64: Schema.decodeUnknownEither(TeeBase64),
  urlBase64: Schema.decodeUnknownEither(UrlBase64NoPad),
  policy: Schema.decodeUnknownEither(SnpPolicy)
}

const problems = (e: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(e)
    .map((i) => (i.path.length > 0 ? `${i.path.join(".")}: ${i.message}` : i.message))
    .join("; ")

/** The request's fields decoded, or every failure found in it. */
export const readTeeRequest = (data: unknown): Either.Either<TeeRequest, ReadonlyArray<Failure>> => {
  if (!isObject(data)) return Either.left([makeFailure(TEE_FAILURE.invalidInput, "data must be a JSON object", { field: "data" })])
  const failures: Array<Failure> = []
  const missing = (param: string) => void failures.push(makeFailure(TEE_FAILURE.missingParam, `missing required parameter '${param}'`, { param }))
  const invalid = (field: string, why: string) => void failures.push(makeFailure(TEE_FAILURE.invalidInput, `${field} ${why}`, { field }))
  // Decoded leniently as Buffer decodes (both alphabets): the schemas have checked the text.
  const bytes = (field: string, value: unknown, decode: typeof decoders.base64): Uint8Array | undefined => {
    if (!present(value)) return void missing(field)
    const text = decode(value)
    if (Either.isLeft(text)) return void invalid(field, typeof value === "string" ? problems(text.left) : "must be a string")
    return base64Bytes(text.right)
  }

  const nonce = bytes("nonce", data["nonce"], decoders.base64)
  const x = bytes("tee-pubkey-x-b64", data["tee-pubkey-x-b64"], decoders.urlBase64)
  const y = bytes("tee-pubkey-y-b64", data["tee-pubkey-y-b64"], decoders.urlBase64)
  if (x !== undefined && y !== undefined) {
    const key = teeKeyCurve(x, y)
    if ("reason" in key) failures.push(makeFailure(TEE_FAILURE.invalidPublicKey, `tee-pubkey-x-b64, tee-pubkey-y-b64: ${key.reason}`, { field: "tee-pubkey" }))
  }

  let report: Uint8Array | undefined
  let vcek: string | undefined
  const teeEvidence = data["tee-evidence"]
  if (!present(teeEvidence)) missing("tee-evidence")
  else if (!isObject(teeEvidence)) invalid("tee-evidence", "must be an object")
  else {
    const tee = teeEvidence["tee"]
    if (!present(tee)) missing("tee-evidence.tee")
    else if (tee !== "snp") {
      failures.push(makeFailure(TEE_FAILURE.invalidTee, `invalid tee argument ${JSON.stringify(tee)}: attest verifies "snp"`, { field: "tee-evidence.tee" }))
    }
    const evidence = teeEvidence["evidence"]
    if (!present(evidence)) missing("tee-evidence.evidence")
    else if (!isObject(evidence)) invalid("tee-evidence.evidence", "must be an object")
    else if (tee === "snp") {
      report = bytes("tee-evidence.evidence.snp-report", evidence["snp-report"], decoders.base64)
      if (present(evidence["vcek"])) {
        const v = decoders.base64(evidence["vcek"])
        if (Either.isLeft(v)) invalid("tee-evidence.evidence.vcek", typeof evidence["vcek"] === "string" ? problems(v.left) : "must be a string")
        else vcek = v.right
      }
    }
  }

  let policy: SnpPolicy | undefined
  if (data["snp_policy"] !== undefined && data["snp_policy"] !== null) {
    const p = decoders.policy(data["snp_policy"], { errors: "all" })
    if (Either.isLeft(p)) invalid("snp_policy", `does not decode: ${problems(p.left)}`)
    else policy = p.right
  }

  if (failures.length > 0 || nonce === undefined || x === undefined || y === undefined || report === undefined) return Either.left(failures)
  return Either.right({ tee: "snp", snp: { report, vcek, freshness: { nonce, x, y }, policy } })
}
