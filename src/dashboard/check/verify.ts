/**
 * "Check it yourself": evidence verified where the user is (the browser page, check/page.ts), with
 * the verifier's own engines on the portable crypto port. Each check calls the function the server
 * or the CLI calls for the same evidence, so a verdict and its failure types are the server's:
 *
 * - a Keylime quote with its AK and nonce (and, optionally, the IMA list with its runtime policy,
 *   the boot log with its reference state, a tpm_policy): `verifyEvidenceRequest`, the request
 *   logic of `POST verify/evidence`;
 * - an IMA list with a runtime policy alone: `verifyIma`, as `attest policy check`;
 * - a boot log with a reference state alone: the log's replay judged by the policy, as `attest
 *   policy check-boot`;
 * - an SEV-SNP report with its VCEK: `verifySnpEvidence` (`verifyTeeEvidence` when a nonce and the
 *   TEE key are given), as `attest tee verify-snp`;
 * - an EAR with the verifier's JWKS: `verifyEar`, as `attest ear verify`.
 *
 * Every function is asynchronous (RSA signatures are WebCrypto's) and never throws: bad input is a
 * failure naming the field.
 */
import { Effect, Either, Schema } from "effect"
import { type Failure, makeFailure } from "../../../schemas/Evidence.js"
import { evaluateMeasuredBoot } from "../../boot/evaluate.js"
import { acceptAllPolicy, builtinMbPolicies, type MbPolicy } from "../../boot/policy.js"
import { replayPcrs } from "../../boot/replay.js"
import { parseEventLog, parseEventLogBase64 } from "../../boot/eventLog.js"
import { settleSignatures } from "../../crypto/active.js"
import { base64Bytes, hexBytes, latin1, toBase64, toHex } from "../../crypto/encoding.js"
import { overallStatus } from "../../ear/claims.js"
import { keysFromJwks } from "../../ear/jwks.js"
import { verifyEar } from "../../ear/verify.js"
import { hashAlgFromHexLength, isHex } from "../../ima/hash.js"
import { loadRuntimePolicy } from "../../ima/load.js"
import { verifyIma } from "../../ima/verify.js"
import { fromPem, isPemText } from "../../crypto/pem.js"
import { SNP_REPORT_SIZE } from "../../tee/snp/report.js"
import { verifySnpEvidence } from "../../tee/snp/verify.js"
import { verifyTeeEvidence } from "../../tee/verify.js"
import type { HashAlg } from "../../tpm/hashAlg.js"
import { defaultSeverityPolicy } from "../../attestation/evaluate/severity.js"
import { verifyEvidenceRequest } from "../../verifier/stateless/verifyEvidence.js"

export type CheckKind = "quote" | "ima" | "boot" | "snp" | "ear"

export interface CheckFailure {
  readonly type: string
  readonly message: string
}

export interface CheckResult {
  readonly kind: CheckKind
  readonly valid: boolean
  readonly failures: ReadonlyArray<CheckFailure>
  /** What was verified, for a person: one fact a line. */
  readonly facts: ReadonlyArray<string>
}

const failureOf = (f: Failure): CheckFailure => ({ type: f.type, message: String(f.context.message ?? "") })

const result = (kind: CheckKind, failures: ReadonlyArray<Failure>, facts: ReadonlyArray<string> = []): CheckResult => ({
  kind,
  valid: failures.length === 0,
  failures: failures.map(failureOf),
  facts
})

const inputError = (kind: CheckKind, field: string, reason: string): CheckResult =>
  result(kind, [makeFailure("default.invalid_param", `invalid parameter "${field}": ${reason}`, { parameter: field })])

const present = (s: string | undefined): s is string => s !== undefined && s.trim() !== ""

/** The bytes of hex or base64 text (whitespace ignored), or of a file: a text file of hex or base64 is decoded, any other is taken as binary. */
export const bytesOf = (input: Uint8Array | string): Uint8Array => {
  if (typeof input !== "string") return /^[\sA-Za-z0-9+/=_-]+$/.test(latin1(input)) ? bytesOf(latin1(input)) : input
  const text = input.replace(/\s+/g, "")
  return /^(?:[0-9a-fA-F]{2})+$/.test(text) ? hexBytes(text) : base64Bytes(text)
}

// ---------------------------------------------------------------------------------------------
// quote (verify/evidence)

export interface QuoteInput {
  /** Keylime's quote string, `r<TPMS_ATTEST>:<TPMT_SIGNATURE>:<PCR blob>`. */
  readonly quote: string
  /** The AK as Keylime's `aik_tpm`: a TPM2B_PUBLIC (base64 text, hex text or the binary file). */
  readonly ak: Uint8Array | string
  /** The nonce the quote answers (text). */
  readonly nonce: string
  readonly hashAlg?: string
  readonly tpmPolicy?: string
  readonly imaList?: string
  readonly runtimePolicy?: string
  /** The binary UEFI event log, or its base64 text. */
  readonly bootLog?: Uint8Array | string
  readonly refState?: string
  /** The measured-boot policy that judges the reference state (the server's `measured_boot_policy_name`); default: `example` with a reference state. */
  readonly mbPolicy?: string
}

const mbPolicyNamed = (name: string | undefined, refState: boolean): MbPolicy | undefined =>
  builtinMbPolicies.find((p) => p.name === (name ?? (refState ? "example" : "accept-all")))

/** The `verify/evidence` body (type tpm) the inputs stand for. */
export const quoteRequest = (i: QuoteInput): Record<string, unknown> => {
  const bootLog = i.bootLog === undefined ? undefined : typeof i.bootLog === "string" ? i.bootLog.replace(/\s+/g, "") : toBase64(i.bootLog)
  const policies = present(i.tpmPolicy) || present(i.runtimePolicy) || present(i.refState)
  return {
    type: "tpm",
    data: {
      quote: i.quote.trim(),
      nonce: i.nonce,
      hash_alg: i.hashAlg ?? "sha256",
      // verify/evidence asks for the EK but checks nothing with it
      tpm_ek: "(not checked)",
      tpm_ak: toBase64(bytesOf(i.ak)),
      // a quote alone: an empty tpm_policy (no PCR values asked for), as at least one policy must be given
      tpm_policy: present(i.tpmPolicy) ? i.tpmPolicy : policies ? undefined : "{}",
      runtime_policy: present(i.runtimePolicy) ? i.runtimePolicy : undefined,
      mb_policy: present(i.refState) ? i.refState : undefined,
      ima_measurement_list: present(i.imaList) ? i.imaList : undefined,
      mb_log: bootLog !== undefined && bootLog !== "" ? bootLog : undefined
    }
  }
}

export const checkQuote = async (i: QuoteInput): Promise<CheckResult> => {
  const measuredBootPolicy = mbPolicyNamed(i.mbPolicy, present(i.refState))
  if (measuredBootPolicy === undefined) return inputError("quote", "mb_policy_name", `'${i.mbPolicy}' is not one of ${builtinMbPolicies.map((p) => p.name).join(", ")}`)
  const body = quoteRequest(i)
  const answer = await settleSignatures(() =>
    verifyEvidenceRequest(body, { major: 2, minor: 5 }, { severity: defaultSeverityPolicy, measuredBootPolicy, reportTomtou: false })
  )
  if (Either.isLeft(answer)) {
    const e = answer.left
    return e._tag === "EvidenceInputInvalid"
      ? result("quote", e.failures)
      : result("quote", [makeFailure("default.invalid_param", e.message)])
  }
  const evaluation = answer.right.evaluation
  const claims = evaluation.claims?.type === "tpm" ? evaluation.claims : undefined
  const facts = claims === undefined ? [] : [
    `quote signed by the AK over the nonce, ${claims.hash_alg}`,
    ...Object.entries(claims.pcrs).map(([pcr, value]) => `PCR ${pcr} = ${value}`),
    ...(claims.ima === undefined ? [] : [`IMA: ${claims.ima.entries} entries, ${claims.ima.matched} covered by the quote`])
  ]
  return result("quote", evaluation.failures, facts)
}

// ---------------------------------------------------------------------------------------------
// IMA list with a runtime policy (attest policy check)

export interface ImaInput {
  readonly list: string
  readonly runtimePolicy: string
  /** The quoted PCR 10 (hex), when known: the list must replay to it. */
  readonly pcr10?: string
}

export const checkIma = async (i: ImaInput): Promise<CheckResult> => {
  const loaded = loadRuntimePolicy(i.runtimePolicy)
  if (Either.isLeft(loaded)) return inputError("ima", "runtime_policy", loaded.left.message)
  let bank: HashAlg = "sha256"
  let quoted: Partial<Record<HashAlg, Uint8Array>> = {}
  if (present(i.pcr10)) {
    const hex = i.pcr10.trim().toLowerCase().replace(/^0x/, "")
    const alg = hashAlgFromHexLength(hex.length)
    if (!isHex(hex) || alg === undefined) return inputError("ima", "pcr10", "must be a sha1/sha256/sha384/sha512 digest in hex")
    bank = alg
    quoted = { [alg]: hexBytes(hex) }
  }
  const r = await settleSignatures(() => verifyIma({ list: i.list, startEntry: 0, policy: loaded.right.policy, quotedPcr10: quoted, banks: [bank] }))
  return result("ima", r.failures, [`${r.entries} entries`, `PCR 10 ${bank} = ${r.pcrs[bank] ?? ""}`])
}

// ---------------------------------------------------------------------------------------------
// boot log with a reference state (attest policy check-boot)

export interface BootInput {
  readonly log: Uint8Array | string
  readonly refState: string
  /** default: example */
  readonly mbPolicy?: string
}

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

export const checkBoot = async (i: BootInput): Promise<CheckResult> => {
  const policy = mbPolicyNamed(i.mbPolicy ?? "example", true) ?? acceptAllPolicy
  const ref = decodeJson(i.refState)
  if (Either.isLeft(ref)) return inputError("boot", "mb_policy", "the reference state is not JSON")
  const parsed = typeof i.log === "string" ? parseEventLogBase64(i.log) : parseEventLog(i.log)
  if (Either.isLeft(parsed)) {
    const r = evaluateMeasuredBoot({ log: i.log, quotedPcrs: [], refstate: ref.right }, policy)
    return result("boot", r.failures)
  }
  const r = await settleSignatures(() => evaluateMeasuredBoot({ log: parsed.right, quotedPcrs: replayPcrs(parsed.right), refstate: ref.right }, policy))
  return result("boot", r.failures, [`${parsed.right.events.length} events, policy '${policy.name}'`, ...r.replayed.map((b) => `${b.hash}: PCRs ${[...b.values.keys()].join(", ")} replayed`)])
}

// ---------------------------------------------------------------------------------------------
// SEV-SNP report with its VCEK (attest tee verify-snp)

export interface SnpInput {
  /** The report: binary (1184 bytes), hex or base64 text. */
  readonly report: Uint8Array | string
  /** The VCEK: DER or PEM. */
  readonly vcek: Uint8Array | string
  /** Freshness, all three or none: the nonce (base64) and the TEE key's x and y (base64url). */
  readonly nonce?: string
  readonly pubkeyX?: string
  readonly pubkeyY?: string
  readonly now: Date
}

const vcekDer = (input: Uint8Array | string): Uint8Array => {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input
  return isPemText(bytes) ? (fromPem(typeof input === "string" ? input : latin1(bytes)).find((b) => b.label === "CERTIFICATE")?.der ?? bytes) : bytes
}

export const checkSnp = async (i: SnpInput): Promise<CheckResult> => {
  const report = typeof i.report !== "string" && i.report.length === SNP_REPORT_SIZE ? i.report : bytesOf(i.report)
  const vcek = toBase64(vcekDer(i.vcek))
  const fresh = [i.nonce, i.pubkeyX, i.pubkeyY].filter(present).length
  if (fresh !== 0 && fresh !== 3) return inputError("snp", "nonce", "the nonce and the TEE key's x and y go together")
  const verdict = await settleSignatures(() =>
    fresh === 3
      ? verifyTeeEvidence({ nonce: i.nonce, "tee-pubkey-x-b64": i.pubkeyX, "tee-pubkey-y-b64": i.pubkeyY, "tee-evidence": { tee: "snp", evidence: { "snp-report": toBase64(report), vcek } } }, { now: i.now })
      : verifySnpEvidence({ report, vcek, freshness: undefined, policy: undefined }, { now: i.now })
  )
  const facts = Object.entries(verdict.claims).map(([k, v]) => `${k}: ${Array.isArray(v) ? toHex(Uint8Array.from(v as Array<number>)) : String(v)}`)
  return result("snp", verdict.failures, fresh === 3 ? facts : ["freshness not checked (no nonce)", ...facts])
}

// ---------------------------------------------------------------------------------------------
// EAR with the verifier's JWKS (attest ear verify)

export interface EarInput {
  readonly token: string
  readonly jwks: string
}

export const checkEar = async (i: EarInput): Promise<CheckResult> => {
  const keys = keysFromJwks(i.jwks)
  if (Either.isLeft(keys)) return inputError("ear", "jwks", keys.left)
  const verified = await Effect.runPromise(Effect.either(verifyEar(i.token, keys.right)))
  if (Either.isLeft(verified)) return result("ear", [makeFailure(`ear.${verified.left.reason}`, verified.left.message)])
  const { claims, kid } = verified.right
  const status = overallStatus(claims)
  const facts = [
    `status: ${status} (signature verified with key ${kid})`,
    `issued: ${new Date(claims.iat * 1000).toISOString()}`,
    ...(claims.sub === undefined ? [] : [`agent: ${claims.sub}`]),
    ...Object.entries(claims.submods).map(([name, a]) => `${name}: ${a["ear.status"]}`)
  ]
  // The token verified; what it says about the attested machine is its status.
  const failures = Object.values(claims.submods).flatMap((a) => (a["ear.attest.failures"] ?? []).map((f) => makeFailure(f.type, f.message)))
  return { kind: "ear", valid: status === "affirming", failures: failures.map(failureOf), facts }
}
