/**
 * The claims of a verified SNP report, named as Keylime names them (byte fields as lists of
 * numbers, TCB parts, platform and guest-policy bits), plus attest's: chip id, VMPL, product line,
 * and the FMC part of a Turin TCB.
 */
import { toHex } from "../../crypto/encoding.js"
import { PLATFORM, POLICY, type SnpReport } from "./report.js"
import { decodeTcb, type ProductLine } from "./tcb.js"

export const snpClaims = (report: SnpReport, product: ProductLine): Record<string, unknown> => {
  const tcb = decodeTcb(report.reportedTcb, product)
  const bit = (v: bigint, mask: bigint) => (v & mask) !== 0n
  return {
    measurement: Array.from(report.measurement),
    report_data: Array.from(report.reportData),
    host_data: Array.from(report.hostData),
    platform_smt_enabled: bit(report.platformInfo, PLATFORM.smtEnabled),
    platform_tsme_enabled: bit(report.platformInfo, PLATFORM.tsmeEnabled),
    reported_tcb_bootloader: tcb.bootloader,
    reported_tcb_tee: tcb.tee,
    reported_tcb_snp: tcb.snp,
    reported_tcb_microcode: tcb.microcode,
    ...(tcb.fmc === undefined ? {} : { reported_tcb_fmc: tcb.fmc }),
    policy_abi_major: Number((report.policy >> 8n) & 0xffn),
    policy_abi_minor: Number(report.policy & 0xffn),
    policy_smt_allowed: bit(report.policy, POLICY.smtAllowed),
    policy_migrate_ma: bit(report.policy, POLICY.migrateMa),
    policy_debug_allowed: bit(report.policy, POLICY.debug),
    policy_single_socket: bit(report.policy, POLICY.singleSocket),
    chip_id: toHex(report.chipId),
    vmpl: report.vmpl,
    product_line: product,
    report_version: report.version
  }
}
