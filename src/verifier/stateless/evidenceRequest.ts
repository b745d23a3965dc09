/**
 * The input checks of POST verify/evidence, in Keylime's order (keylime-wire.md §1.4): `type` and
 * `data` present, `type` is `tpm` or `tee`, then the parameters of that type (absent, null and ""
 * count as missing) and, for `tpm`, at least one policy. Input errors are values with the
 * reference's texts; the HTTP layer answers all of them with 400.
 */
import { Data, Either, ParseResult, Schema } from "effect"
import { type Failure, makeFailure, TpmEvidenceData } from "../../../schemas/Evidence.js"
import { VerifierFailureType } from "../../attestation/evaluate/failures.js"

/** `type` or `data` absent: 400 with this text and empty results. */
export class EvidenceParameterMissing extends Data.TaggedError("EvidenceParameterMissing")<{ readonly name: "type" | "data" }> {
  override get message(): string {
    return `missing parameter '${this.name}'`
  }
}

/** `type` is neither `tpm` nor `tee`: 400 with this text and empty results. */
export class EvidenceTypeInvalid extends Data.TaggedError("EvidenceTypeInvalid")<{ readonly type: unknown }> {
  override get message(): string {
    return "invalid evidence type"
  }
}

/**
 * A parameter of the evidence is missing or unusable: 400 "Bad Request" with the failures
 * (`default.missing_param`, `default.missing_policy`, `default.invalid_param`,
 * `tee_attestation.missing_param`) in the results, as Keylime answers input errors.
 */
export class EvidenceInputInvalid extends Data.TaggedError("EvidenceInputInvalid")<{ readonly failures: ReadonlyArray<Failure> }> {
  override get message(): string {
    return "Bad Request"
  }
}

export type EvidenceRequestError = EvidenceParameterMissing | EvidenceTypeInvalid | EvidenceInputInvalid

export interface TpmEvidenceRequest {
  readonly _tag: "tpm"
  readonly quote: string
  readonly nonce: string
  readonly hash_alg: string
  readonly tpm_ek: string
  readonly tpm_ak: string
  readonly tpm_policy: string | undefined
  readonly runtime_policy: string | undefined
  readonly mb_policy: string | undefined
  readonly ima_measurement_list: string | undefined
  readonly mb_log: string | undefined
  /** The `data` object as sent: what `claims` echo. */
  readonly data: Readonly<Record<string, unknown>>
}

export interface TeeEvidenceRequest {
  readonly _tag: "tee"
  readonly data: Readonly<Record<string, unknown>>
}

export type EvidenceRequest = TpmEvidenceRequest | TeeEvidenceRequest

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null && !Array.isArray(v)

/** Keylime's `"x" in d and d["x"] != ""`; null is missing too (Keylime would fail on it later). */
const given = (d: Readonly<Record<string, unknown>>, key: string): boolean => d[key] !== undefined && d[key] !== null && d[key] !== ""

const missingParam = (type: string, name: string): EvidenceInputInvalid =>
  new EvidenceInputInvalid({ failures: [makeFailure(type, `missing parameter "${name}"`)] })

const TPM_REQUIRED = ["quote", "nonce", "hash_alg", "tpm_ek", "tpm_ak"] as const
const POLICIES = ["tpm_policy", "runtime_policy", "mb_policy"] as const

const decodeTpmData = Schema.decodeUnknownEither(TpmEvidenceData)

const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s === "" ? undefined : s)

const tpmRequest = (data: Readonly<Record<string, unknown>>): Either.Either<TpmEvidenceRequest, EvidenceInputInvalid> => {
  for (const name of TPM_REQUIRED) if (!given(data, name)) return Either.left(missingParam(VerifierFailureType.missingParam, name))
  if (!POLICIES.some((p) => given(data, p))) {
    return Either.left(
      new EvidenceInputInvalid({
        failures: [makeFailure(VerifierFailureType.missingPolicy, "at least one policy (tpm_policy, runtime_policy, or mb_policy) must be provided")]
      })
    )
  }
  // Nulls were "not given" above; drop them so the decode sees only values that were sent.
  const sent: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) if (v !== null) sent[k] = v
  const decoded = decodeTpmData(sent, { errors: "all" })
  if (Either.isLeft(decoded)) {
    // One failure per parameter (an optional field reports "not a string" and "not undefined").
    const names = new Set(ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map((i) => i.path.join(".")))
    const failures = [...names].map((name) =>
      makeFailure(VerifierFailureType.invalidParam, `invalid parameter "${name}": must be a string`, { parameter: name })
    )
    return Either.left(new EvidenceInputInvalid({ failures }))
  }
  const d = decoded.right
  return Either.right({
    _tag: "tpm",
    quote: d.quote!,
    nonce: d.nonce!,
    hash_alg: d.hash_alg!,
    tpm_ek: d.tpm_ek!,
    tpm_ak: d.tpm_ak!,
    tpm_policy: nonEmpty(d.tpm_policy),
    runtime_policy: nonEmpty(d.runtime_policy),
    mb_policy: nonEmpty(d.mb_policy),
    ima_measurement_list: d.ima_measurement_list,
    mb_log: nonEmpty(d.mb_log) ?? nonEmpty(d.mb_list),
    data
  })
}

/** The TEE envelope Keylime checks before it dispatches on the TEE kind; the kind's own fields are the TEE verifier's. */
const teeRequest = (data: Readonly<Record<string, unknown>>): Either.Either<TeeEvidenceRequest, EvidenceInputInvalid> => {
  for (const name of ["tee-evidence", "nonce", "tee-pubkey-x-b64", "tee-pubkey-y-b64"]) {
    if (!given(data, name)) return Either.left(missingParam(VerifierFailureType.teeMissingParam, name))
  }
  const evidence = data["tee-evidence"]
  for (const name of ["tee", "evidence"]) {
    if (!isRecord(evidence) || !given(evidence, name)) return Either.left(missingParam(VerifierFailureType.teeMissingParam, name))
  }
  return Either.right({ _tag: "tee", data })
}

/** The decoded JSON body → a tpm or tee request, or the input error Keylime answers. */
export const parseEvidenceRequest = (body: unknown): Either.Either<EvidenceRequest, EvidenceRequestError> => {
  const b: Readonly<Record<string, unknown>> = isRecord(body) ? body : {}
  if (!given(b, "type")) return Either.left(new EvidenceParameterMissing({ name: "type" }))
  if (!given(b, "data")) return Either.left(new EvidenceParameterMissing({ name: "data" }))
  // A `data` that is not an object has none of the parameters (Keylime tests membership with `in`).
  const data = isRecord(b["data"]) ? b["data"] : {}
  if (b["type"] === "tpm") return tpmRequest(data)
  if (b["type"] === "tee") return teeRequest(data)
  return Either.left(new EvidenceTypeInvalid({ type: b["type"] }))
}
