/**
 * `snp_policy` rules over a verified report: allowed launch measurements, a minimum reported TCB,
 * no debugging, SMT off, single socket. One failure per violated rule (`tee_attestation.policy.<rule>`), each
 * saying what the report holds and what the policy wants.
 */
import { type Failure, makeFailure, type SnpPolicy } from "../../../schemas/Evidence.js"
import { toHex } from "../../crypto/encoding.js"
import { policyFailureType } from "../failures.js"
import { PLATFORM, POLICY, type SnpReport } from "./report.js"
import { decodeTcb, type ProductLine, TCB_PART_NAMES } from "./tcb.js"

const hex = (b: Uint8Array) => toHex(b)

export const evaluateSnpPolicy = (policy: SnpPolicy, report: SnpReport, product: ProductLine): ReadonlyArray<Failure> => {
  const failures: Array<Failure> = []
  if (policy.allowed_measurements !== undefined) {
    const measurement = hex(report.measurement)
    if (!policy.allowed_measurements.some((m) => m.toLowerCase() === measurement)) {
      failures.push(makeFailure(policyFailureType("measurement"), "launch measurement is not one of the allowed measurements", { measurement }))
    }
  }
  if (policy.minimum_tcb !== undefined) {
    const reported = decodeTcb(report.reportedTcb, product)
    const below = TCB_PART_NAMES.flatMap((part) => {
      const min = policy.minimum_tcb?.[part]
      if (min === undefined) return []
      const got = reported[part]
      return got === undefined || got < min ? [{ part, got: got ?? null, minimum: min }] : []
    })
    if (below.length > 0) {
      const parts = below.map((b) => `${b.part} ${b.got ?? "(absent)"} < ${b.minimum}`).join(", ")
      failures.push(makeFailure(policyFailureType("minimum_tcb"), `reported TCB is below the minimum: ${parts}`, { below }))
    }
  }
  if (policy.allow_debug !== true && (report.policy & POLICY.debug) !== 0n) {
    failures.push(makeFailure(policyFailureType("debug"), "the guest policy allows debugging, which the policy forbids"))
  }
  if (policy.allow_smt === false && (report.platformInfo & PLATFORM.smtEnabled) !== 0n) {
    failures.push(makeFailure(policyFailureType("smt"), "the platform runs with SMT enabled, which the policy forbids"))
  }
  if (policy.require_single_socket === true && (report.policy & POLICY.singleSocket) === 0n) {
    failures.push(makeFailure(policyFailureType("single_socket"), "the guest policy does not restrict the guest to a single socket, which the policy requires"))
  }
  return failures
}
