/**
 * SEV-SNP evidence, checked completely and offline: the report parses (length, version, algorithm);
 * the VCEK comes from the request or the preloaded directory; it chains ARK → ASK → VCEK for its
 * product line (cached per VCEK); its TCB extensions equal the report's reported_tcb and its hwID the
 * report's chip_id; its P-384 key verifies the signature; report_data is SHA-512(x ‖ y ‖ nonce); the
 * optional policy holds. Every check that can run does, so one answer lists every failure; claims
 * are given only for a valid report.
 */
import { Either } from "effect"
import { cryptoPort } from "../../crypto/active.js"
import { base64Bytes, concat, toHex } from "../../crypto/encoding.js"
import { describeKey, timingSafeEqual } from "../../crypto/port.js"
import { type Failure, makeFailure, type SnpPolicy } from "../../../schemas/Evidence.js"
import { TEE_FAILURE } from "../failures.js"
import { amdRoots, type ChainCache, type SnpRoots, type VerifiedVcek, verifyVcekChain } from "./chain.js"
import { snpClaims } from "./claims.js"
import { evaluateSnpPolicy } from "./policy.js"
import { parseSnpReport, type SnpReport } from "./report.js"
import { verifyReportSignature } from "./signature.js"
import { decodeTcb, formatTcb, tcbEquals } from "./tcb.js"
import { isP384, parseVcek, type Vcek } from "./vcek.js"
import type { VcekDirectory } from "./vcekDirectory.js"

export interface SnpVerifyOptions {
  /** The time certificate validity is judged at (the verifier passes its Clock's). */
  readonly now: Date
  /** VCEKs loaded at start-up (`loadVcekDirectory`), used when the request brings none. */
  readonly vcekDir?: VcekDirectory
  /** Verified chains per VCEK; without one, every call verifies the chain. */
  readonly chainCache?: ChainCache
  /** ARK/ASK per product line; AMD's by default. */
  readonly roots?: SnpRoots
}

export interface SnpEvidenceInput {
  readonly report: Uint8Array
  /** The request's `vcek` (base64 DER, decoded only when its chain is not cached); undefined = the directory's. */
  readonly vcek: string | undefined
  /** The caller's nonce and the TEE key (x, y); undefined = freshness not checked (the offline CLI without --nonce). */
  readonly freshness: { readonly nonce: Uint8Array; readonly x: Uint8Array; readonly y: Uint8Array } | undefined
  readonly policy: SnpPolicy | undefined
}

export interface SnpResult {
  readonly failures: ReadonlyArray<Failure>
  readonly claims: Record<string, unknown>
}

const hex = toHex

const equalBytes = timingSafeEqual

type Resolved = { readonly vcek: Vcek; readonly chain: string } | { readonly failure: Failure }

/** The VCEK to check the report with, and why its chain fails ("" = verified). */
const resolveVcek = (input: SnpEvidenceInput, report: SnpReport, options: SnpVerifyOptions): Resolved => {
  const roots = options.roots ?? amdRoots()
  let key: string
  let load: () => Either.Either<Vcek, string>
  if (input.vcek !== undefined) {
    const text = input.vcek
    key = text
    load = () => Either.mapLeft(parseVcek(base64Bytes(text)), (e) => e.message)
  } else {
    const entry = options.vcekDir?.lookup(report.chipId, report.reportedTcb)
    if (entry === undefined) {
      return {
        failure: makeFailure(
          TEE_FAILURE.vcekNotFound,
          options.vcekDir === undefined
            ? "the evidence has no vcek and no snp_vcek_dir is configured"
            : `the evidence has no vcek and ${options.vcekDir.dir} has none for this chip and TCB`,
          { chip_id: hex(report.chipId), reported_tcb: hex(report.reportedTcb) }
        )
      }
    }
    key = entry.key
    load = () => Either.right(entry.vcek)
  }
  const cached = options.chainCache?.get(key)
  let verified: VerifiedVcek
  if (cached !== undefined && cached.roots === roots) verified = cached
  else {
    const vcek = load()
    if (Either.isLeft(vcek)) return { failure: makeFailure(TEE_FAILURE.invalidInput, `evidence.vcek: ${vcek.left}`, { field: "evidence.vcek" }) }
    const chain = verifyVcekChain(vcek.right, roots, options.now)
    if (Either.isLeft(chain)) return { vcek: vcek.right, chain: chain.left.reason }
    verified = chain.right
    options.chainCache?.set(key, verified)
  }
  const now = options.now.getTime()
  if (now < verified.validFrom || now > verified.validUntil) {
    const window = `${new Date(verified.validFrom).toISOString()} to ${new Date(verified.validUntil).toISOString()}`
    return { vcek: verified.vcek, chain: `the chain ARK → ASK → VCEK is valid from ${window}, not at ${options.now.toISOString()}` }
  }
  return { vcek: verified.vcek, chain: "" }
}

export const verifySnpEvidence = (input: SnpEvidenceInput, options: SnpVerifyOptions): SnpResult => {
  const parsed = parseSnpReport(input.report)
  if (Either.isLeft(parsed)) {
    const e = parsed.left
    return { failures: [makeFailure(TEE_FAILURE.invalidInput, e.message, { field: "snp-report", report_field: e.field, offset: e.offset })], claims: {} }
  }
  const report = parsed.right
  if (report.signingKey !== 0) {
    const message = `the report is signed by ${report.signingKey === 1 ? "a VLEK" : `signing key ${report.signingKey}`}; attest verifies VCEK-signed reports`
    return { failures: [makeFailure(TEE_FAILURE.invalidInput, message, { field: "snp-report", report_field: "signing_key" })], claims: {} }
  }
  const resolved = resolveVcek(input, report, options)
  if ("failure" in resolved) return { failures: [resolved.failure], claims: {} }
  const { vcek } = resolved
  const failures: Array<Failure> = []
  if (resolved.chain) failures.push(makeFailure(TEE_FAILURE.vcekChain, resolved.chain, { product: vcek.product }))

  const reported = decodeTcb(report.reportedTcb, vcek.product)
  if (!tcbEquals(reported, vcek.tcb)) {
    failures.push(makeFailure(TEE_FAILURE.tcbMismatch, `the VCEK is for TCB ${formatTcb(vcek.tcb)}, the report's reported_tcb is ${formatTcb(reported)}`, {
      vcek_tcb: vcek.tcb,
      reported_tcb: reported
    }))
  }
  // Turin hwIDs are the first 8 bytes of the chip id.
  if (!equalBytes(vcek.hwId, report.chipId.subarray(0, vcek.hwId.length))) {
    const masked = report.chipId.every((b) => b === 0) ? " (the report's chip_id is zero: the guest masks it)" : ""
    failures.push(makeFailure(TEE_FAILURE.chipIdMismatch, `the VCEK belongs to another chip than the report's chip_id${masked}`, {
      vcek_hwid: hex(vcek.hwId),
      chip_id: hex(report.chipId)
    }))
  }
  if (!isP384(vcek.publicKey)) {
    failures.push(makeFailure(TEE_FAILURE.invalidPublicKey, `the VCEK's key is ${describeKey(vcek.publicKey)}, not EC P-384`))
  } else {
    const reason = verifyReportSignature(report, vcek.publicKey)
    if (reason) failures.push(makeFailure(TEE_FAILURE.invalidSignature, `SEV-SNP report signature: ${reason}`))
  }
  const fresh = input.freshness
  if (fresh !== undefined) {
    const expected = cryptoPort().digest("sha512", concat(fresh.x, fresh.y, fresh.nonce))
    if (!equalBytes(expected, report.reportData)) {
      failures.push(makeFailure(TEE_FAILURE.freshnessHashFailed, "REPORT_DATA is not SHA-512(tee-pubkey-x ‖ tee-pubkey-y ‖ nonce)", {
        report_data: hex(report.reportData),
        expected: hex(expected)
      }))
    }
  }
  if (input.policy !== undefined) failures.push(...evaluateSnpPolicy(input.policy, report, vcek.product))
  return { failures, claims: failures.length === 0 ? snpClaims(report, vcek.product) : {} }
}
