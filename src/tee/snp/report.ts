/**
 * The SEV-SNP ATTESTATION_REPORT (AMD SEV-SNP ABI spec, table "ATTESTATION_REPORT Structure"):
 * 0x4A0 bytes, little-endian, signed over 0x000–0x29F; the signature at 0x2A0 holds r and s as
 * 72-byte little-endian integers. Parsing checks the length, the version and the signature
 * algorithm, and returns views of every field; failures are typed and name the field and offset.
 * `encodeSnpReport` writes one (tests build and sign their own reports with it).
 */
import { Data, Either } from "effect"

export const SNP_REPORT_SIZE = 0x4a0
/** Bytes covered by the signature. */
export const SNP_SIGNED_SIZE = 0x2a0
/** Report versions attest reads: 2 (Milan firmware), 3 (adds CPUID identification), 4 and 5 (Turin, mitigation vectors). */
export const SNP_REPORT_VERSIONS: ReadonlyArray<number> = [2, 3, 4, 5]
/** SIGNATURE_ALGO 1: ECDSA P-384 with SHA-384. */
export const SNP_SIG_ALGO_ECDSA_P384_SHA384 = 1

export const OFFSET = {
  version: 0x00,
  guestSvn: 0x04,
  policy: 0x08,
  familyId: 0x10,
  imageId: 0x20,
  vmpl: 0x30,
  signatureAlgo: 0x34,
  currentTcb: 0x38,
  platformInfo: 0x40,
  keyInfo: 0x48,
  reportData: 0x50,
  measurement: 0x90,
  hostData: 0xc0,
  idKeyDigest: 0xe0,
  authorKeyDigest: 0x110,
  reportId: 0x140,
  reportIdMa: 0x160,
  reportedTcb: 0x180,
  cpuidFamily: 0x188,
  cpuidModel: 0x189,
  cpuidStepping: 0x18a,
  chipId: 0x1a0,
  committedTcb: 0x1e0,
  currentVersion: 0x1e8,
  committedVersion: 0x1ec,
  launchTcb: 0x1f0,
  signatureR: 0x2a0,
  signatureS: 0x2e8,
  signatureReserved: 0x330
} as const

/** A report that cannot be read: which field, at which byte offset, why. */
export class SnpReportError extends Data.TaggedError("SnpReportError")<{
  readonly field: string
  readonly offset: number
  readonly reason: string
}> {
  override get message(): string {
    // the whole report's size is not a field at an offset
    return this.field === "report" ? `SNP report ${this.reason}` : `SNP report ${this.field} at byte 0x${this.offset.toString(16)}: ${this.reason}`
  }
}

export interface SnpReport {
  /** The whole report; every byte field below is a view into it. */
  readonly bytes: Uint8Array
  readonly version: number
  readonly guestSvn: number
  /** Guest policy: ABI minor/major (bits 0–15), SMT allowed (16), migration agent (18), debug (19), single socket (20). */
  readonly policy: bigint
  readonly familyId: Uint8Array
  readonly imageId: Uint8Array
  readonly vmpl: number
  readonly signatureAlgo: number
  readonly currentTcb: Uint8Array
  /** Platform: SMT enabled (bit 0), TSME enabled (bit 1), … */
  readonly platformInfo: bigint
  /** 0 = signed by the VCEK, 1 = by a VLEK. */
  readonly signingKey: number
  readonly maskChipKey: boolean
  readonly authorKeyEn: boolean
  readonly reportData: Uint8Array
  readonly measurement: Uint8Array
  readonly hostData: Uint8Array
  readonly idKeyDigest: Uint8Array
  readonly authorKeyDigest: Uint8Array
  readonly reportId: Uint8Array
  readonly reportIdMa: Uint8Array
  readonly reportedTcb: Uint8Array
  /** Version 3 and later: the CPU's family, model and stepping. */
  readonly cpuid: { readonly family: number; readonly model: number; readonly stepping: number } | undefined
  readonly chipId: Uint8Array
  readonly committedTcb: Uint8Array
  readonly launchTcb: Uint8Array
  /** r and s, 72 bytes each, little-endian, as stored. */
  readonly signatureR: Uint8Array
  readonly signatureS: Uint8Array
  /** The rest of the signature area after r and s (reserved, zero). */
  readonly signatureReserved: Uint8Array
}

const u32 = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0
const u64 = (b: Uint8Array, at: number) => BigInt(u32(b, at)) | (BigInt(u32(b, at + 4)) << 32n)

const fail = (field: string, offset: number, reason: string) => Either.left(new SnpReportError({ field, offset, reason }))

export const parseSnpReport = (bytes: Uint8Array): Either.Either<SnpReport, SnpReportError> => {
  if (bytes.length !== SNP_REPORT_SIZE) {
    return fail("report", Math.min(bytes.length, SNP_REPORT_SIZE), `is ${bytes.length} bytes, an SNP attestation report is ${SNP_REPORT_SIZE} (0x4A0)`)
  }
  const version = u32(bytes, OFFSET.version)
  if (!SNP_REPORT_VERSIONS.includes(version)) return fail("version", OFFSET.version, `${version} is not a report version attest reads (${SNP_REPORT_VERSIONS.join(", ")})`)
  const signatureAlgo = u32(bytes, OFFSET.signatureAlgo)
  if (signatureAlgo !== SNP_SIG_ALGO_ECDSA_P384_SHA384) {
    return fail("signature_algo", OFFSET.signatureAlgo, `${signatureAlgo} is not 1 (ECDSA P-384 with SHA-384)`)
  }
  const at = (offset: number, n: number) => bytes.subarray(offset, offset + n)
  const keyInfo = u32(bytes, OFFSET.keyInfo)
  return Either.right({
    bytes,
    version,
    guestSvn: u32(bytes, OFFSET.guestSvn),
    policy: u64(bytes, OFFSET.policy),
    familyId: at(OFFSET.familyId, 16),
    imageId: at(OFFSET.imageId, 16),
    vmpl: u32(bytes, OFFSET.vmpl),
    signatureAlgo,
    currentTcb: at(OFFSET.currentTcb, 8),
    platformInfo: u64(bytes, OFFSET.platformInfo),
    signingKey: (keyInfo >> 2) & 0x7,
    maskChipKey: (keyInfo & 0x2) !== 0,
    authorKeyEn: (keyInfo & 0x1) !== 0,
    reportData: at(OFFSET.reportData, 64),
    measurement: at(OFFSET.measurement, 48),
    hostData: at(OFFSET.hostData, 32),
    idKeyDigest: at(OFFSET.idKeyDigest, 48),
    authorKeyDigest: at(OFFSET.authorKeyDigest, 48),
    reportId: at(OFFSET.reportId, 32),
    reportIdMa: at(OFFSET.reportIdMa, 32),
    reportedTcb: at(OFFSET.reportedTcb, 8),
    cpuid: version >= 3 ? { family: bytes[OFFSET.cpuidFamily]!, model: bytes[OFFSET.cpuidModel]!, stepping: bytes[OFFSET.cpuidStepping]! } : undefined,
    chipId: at(OFFSET.chipId, 64),
    committedTcb: at(OFFSET.committedTcb, 8),
    launchTcb: at(OFFSET.launchTcb, 8),
    signatureR: at(OFFSET.signatureR, 72),
    signatureS: at(OFFSET.signatureS, 72),
    signatureReserved: bytes.subarray(OFFSET.signatureReserved)
  })
}

/** Fields of a report to write; omitted ones are zero (version 2, signature algorithm 1). */
export interface SnpReportFields {
  readonly version?: number
  readonly guestSvn?: number
  readonly policy?: bigint
  readonly familyId?: Uint8Array
  readonly imageId?: Uint8Array
  readonly vmpl?: number
  readonly signatureAlgo?: number
  readonly currentTcb?: Uint8Array
  readonly platformInfo?: bigint
  readonly signingKey?: number
  readonly reportData?: Uint8Array
  readonly measurement?: Uint8Array
  readonly hostData?: Uint8Array
  readonly idKeyDigest?: Uint8Array
  readonly authorKeyDigest?: Uint8Array
  readonly reportId?: Uint8Array
  readonly reportIdMa?: Uint8Array
  readonly reportedTcb?: Uint8Array
  readonly cpuid?: { readonly family: number; readonly model: number; readonly stepping: number }
  readonly chipId?: Uint8Array
  readonly committedTcb?: Uint8Array
  readonly launchTcb?: Uint8Array
  readonly signatureR?: Uint8Array
  readonly signatureS?: Uint8Array
}

/** Writes a report (the signature area holds `signatureR`/`signatureS` when given, zeros otherwise). */
export const encodeSnpReport = (f: SnpReportFields): Uint8Array => {
  const b = new Uint8Array(SNP_REPORT_SIZE)
  const v = new DataView(b.buffer)
  v.setUint32(OFFSET.version, f.version ?? 2, true)
  v.setUint32(OFFSET.guestSvn, f.guestSvn ?? 0, true)
  v.setBigUint64(OFFSET.policy, f.policy ?? 0x30000n, true)
  v.setUint32(OFFSET.vmpl, f.vmpl ?? 0, true)
  v.setUint32(OFFSET.signatureAlgo, f.signatureAlgo ?? SNP_SIG_ALGO_ECDSA_P384_SHA384, true)
  v.setBigUint64(OFFSET.platformInfo, f.platformInfo ?? 0n, true)
  v.setUint32(OFFSET.keyInfo, (f.signingKey ?? 0) << 2, true)
  const put = (offset: number, n: number, bytes: Uint8Array | undefined) => {
    if (bytes !== undefined) b.set(bytes.subarray(0, n), offset)
  }
  put(OFFSET.familyId, 16, f.familyId)
  put(OFFSET.imageId, 16, f.imageId)
  put(OFFSET.currentTcb, 8, f.currentTcb)
  put(OFFSET.reportData, 64, f.reportData)
  put(OFFSET.measurement, 48, f.measurement)
  put(OFFSET.hostData, 32, f.hostData)
  put(OFFSET.idKeyDigest, 48, f.idKeyDigest)
  put(OFFSET.authorKeyDigest, 48, f.authorKeyDigest)
  put(OFFSET.reportId, 32, f.reportId)
  put(OFFSET.reportIdMa, 32, f.reportIdMa)
  put(OFFSET.reportedTcb, 8, f.reportedTcb)
  if (f.cpuid !== undefined) {
    b[OFFSET.cpuidFamily] = f.cpuid.family
    b[OFFSET.cpuidModel] = f.cpuid.model
    b[OFFSET.cpuidStepping] = f.cpuid.stepping
  }
  put(OFFSET.chipId, 64, f.chipId)
  put(OFFSET.committedTcb, 8, f.committedTcb)
  put(OFFSET.launchTcb, 8, f.launchTcb)
  put(OFFSET.signatureR, 72, f.signatureR)
  put(OFFSET.signatureS, 72, f.signatureS)
  return b
}

/** Guest policy bits (ABI spec, "Guest Policy"). */
export const POLICY = {
  smtAllowed: 1n << 16n,
  migrateMa: 1n << 18n,
  debug: 1n << 19n,
  singleSocket: 1n << 20n
} as const

/** PLATFORM_INFO bits. */
export const PLATFORM = { smtEnabled: 1n << 0n, tsmeEnabled: 1n << 1n } as const
