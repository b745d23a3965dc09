/**
 * The evaluator's inputs and output. Evidence is what one attestation brings (the agent's quote
 * answer and the nonce it was asked); the AgentPolicy is everything compiled once per agent (AK,
 * accepted algorithms, tpm_policy, runtime policy, keyring, measured-boot reference state,
 * options); the EvaluationState is what the previous verdict left.
 */
import type { Failure } from "../../../schemas/Evidence.js"
import type { BootAggregates } from "../../boot/replay.js"
import type { MbPolicy } from "../../boot/policy.js"
import type { CompiledPolicy } from "../../ima/policy.js"
import type { ImaKeyring } from "../../ima/signatures.js"
import type { TpmtPublic } from "../../tpm/public.js"
import type { SeverityPolicy, SeverityVerdict } from "./severity.js"
import type { EvaluationState } from "./state.js"
import type { TpmPolicy } from "./tpmPolicy.js"

/**
 * The agent's `quotes/integrity` answer (spec §2.7, Keylime field names), so a decoded answer is
 * used as is. `pubkey` comes with full quotes (partial=0) only; `enc_alg`/`sign_alg` are absent in
 * `verify/evidence`, which has no algorithm gates.
 */
export interface TpmQuoteAnswer {
  readonly quote: string
  readonly hash_alg: string
  readonly enc_alg?: string | undefined
  readonly sign_alg?: string | undefined
  readonly pubkey?: string | null | undefined
  /** Seconds since the epoch of the agent's boot. */
  readonly boottime?: number | undefined
  /** Absent: the agent sent no list (with PCR 10 quoted that is `pcr_validation.unused_pcr_10`). */
  readonly ima_measurement_list?: string | null | undefined
  readonly ima_measurement_list_entry?: number | undefined
  /** Base64 of the binary UEFI event log. */
  readonly mb_measurement_list?: string | null | undefined
}

export interface TpmEvidence extends TpmQuoteAnswer {
  readonly _tag: "tpm"
  /** The bytes the quote's extraData must equal: the pull nonce's ASCII, or the push challenge decoded. */
  readonly nonce: Uint8Array
}

/** TEE evidence (`verify/evidence` type `tee`): judged by the injected TeeVerifier. */
export interface TeeEvidence {
  readonly _tag: "tee"
  readonly data: unknown
}

export type Evidence = TpmEvidence | TeeEvidence

export interface TeeVerdict {
  readonly valid: boolean
  readonly failures: ReadonlyArray<Failure>
  readonly claims: Readonly<Record<string, unknown>>
}

/** The SEV-SNP module's `verifyTeeEvidence` (src/tee), injected so the evaluator does not depend on it. */
export type TeeVerifier = (data: unknown) => TeeVerdict

/** The agent's `accept_tpm_hash_algs`, `accept_tpm_encryption_algs`, `accept_tpm_signing_algs`. */
export interface AcceptedAlgorithms {
  readonly hash: ReadonlyArray<string>
  readonly encryption: ReadonlyArray<string>
  readonly signing: ReadonlyArray<string>
}

export interface MeasuredBootPolicy {
  /** The named policy (`measured_boot_policy_name`: accept-all, reject-all, example, …). */
  readonly policy: MbPolicy
  /** The agent's reference state (parsed `mb_policy` JSON); empty means no measured-boot check, as in Keylime. */
  readonly refstate: unknown
}

export interface EvaluateOptions {
  readonly severity: SeverityPolicy
  /** `measured_boot_evaluate`: the named policy judges the log on the first attestation only, or on every one. */
  readonly measuredBootEvaluate: "once" | "always"
  /** Report ToMToU entries as `ima.validation.tomtou` (Keylime does so when `ignore_tomtou_errors` is True). */
  readonly reportTomtou: boolean
  /** PCR 16 must hold H(0‖H(NK PEM)) (pull and push); `verify/evidence` and identity skip it, as Keylime. */
  readonly bindNk: boolean
  /** Compare the quote's clock with the previous accepted one (stateful paths only). */
  readonly checkClock: boolean
}

export interface AgentPolicy {
  /**
   * The AK as TPM2B_PUBLIC bytes (`ak_tpm`) or parsed. Keep the same object across rounds: the AK
   * cache finds its KeyObject by identity first.
   */
  readonly ak: Uint8Array | TpmtPublic
  /** Algorithm gates; undefined (verify/evidence) checks only that hash_alg is a known hash. */
  readonly accept?: AcceptedAlgorithms | undefined
  readonly tpmPolicy: TpmPolicy
  /** Compiled once elsewhere; undefined is Keylime's empty runtime policy (every measured file fails). */
  readonly runtimePolicy?: CompiledPolicy | undefined
  /** `ima_sign_verification_keys` of the agent. */
  readonly imaKeyring?: ImaKeyring | undefined
  readonly measuredBoot?: MeasuredBootPolicy | undefined
  readonly verifyTee?: TeeVerifier | undefined
  readonly options: EvaluateOptions
}

/** What was verified, for the loop, push results and logs (never the policy itself). */
export interface TpmClaims {
  readonly type: "tpm"
  readonly hash_alg: string
  readonly enc_alg?: string | undefined
  readonly sign_alg?: string | undefined
  /** The quoted PCRs of the hash_alg bank, verified against the quote's digest (PCR → hex). */
  readonly pcrs: Readonly<Record<string, string>>
  readonly clock: { readonly clock: string; readonly reset_count: number; readonly restart_count: number; readonly safe: boolean }
  /** Entries received, entries the quote covers (accepted this round), next entry to ask for. */
  readonly ima?: { readonly entries: number; readonly matched: number; readonly next_entry: number } | undefined
  readonly boot_aggregates?: BootAggregates | undefined
}

export interface TeeClaims {
  readonly type: "tee"
  readonly claims: Readonly<Record<string, unknown>>
}

export type Claims = TpmClaims | TeeClaims

export interface Evaluation {
  /** Empty = the evidence is valid. Keylime's order. */
  readonly failures: ReadonlyArray<Failure>
  /** Each failure's severity, the highest, recoverability and whether polling must stop. */
  readonly severity: SeverityVerdict
  /** Persist this after the verdict (also after a failure: IMA progress resets, count does not grow). */
  readonly nextState: EvaluationState
  /** Undefined when the quote itself did not verify (nothing was established). */
  readonly claims: Claims | undefined
  /**
   * The agent rebooted since the stored IMA progress: nothing of its list was judged and nothing is
   * counted; ask again at once from entry 0 with the NK (partial=0: `nextState.nk` is null). Not a
   * failure (Keylime).
   */
  readonly restart: boolean
  /** A quote carried an NK that differs from the stored one: V must be delivered (again). */
  readonly nkChanged: boolean
  /** When the caller gave `evaluateEvidence` a clock: each stage that ran, with its start and end on it. */
  readonly stages?: ReadonlyArray<StageTiming> | undefined
}

/**
 * The verification stages timed separately: the quote (signature, nonce, clock, PCR 16 binding),
 * the PCR values against `tpm_policy`, the IMA list, the measured-boot log.
 */
export type VerificationStage = "quote" | "pcrs" | "ima" | "boot"

/** One stage's start and end, in the unit of the clock the caller gave (src/ops/stages.ts: performance.now ms). */
export interface StageTiming {
  readonly stage: VerificationStage
  readonly start: number
  readonly end: number
}

/** A monotonic clock the evaluator reads around its stages (no clock: nothing is timed). */
export type StageClock = () => number
