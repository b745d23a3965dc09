/**
 * TEE evidence for `POST verify/evidence` with `type: "tee"` (Keylime's request shape): AMD SEV-SNP
 * attestation reports, verified completely and offline.
 *
 * The interface the verifier calls:
 *
 *   verifyTeeEvidence(data: unknown, options: TeeVerifyOptions): TeeVerdict
 *
 * - Pure and synchronous. `data` is the request's `data` object as received (JSON-decoded, not
 *   validated): it is checked here, and a missing or malformed field is a failure naming it
 *   (`tee_attestation.missing_param`, `tee_attestation.invalid_input`, `tee_attestation.invalid.tee`, `tee_attestation.invalid_public_key`), so the
 *   HTTP layer only chooses the status (Keylime answers 400 for `*.missing_param`).
 * - `options.now`: the time certificate validity is judged at (from the verifier's `Clock`).
 * - `options.vcekDir`: the VCEKs of `snp_vcek_dir`, loaded once at start-up with
 *   `loadVcekDirectory(dir)` (an Effect); used when the evidence carries no `vcek`.
 * - `options.chainCache`: `makeChainCache()` once per verifier; each VCEK's chain ARK → ASK → VCEK
 *   is then verified once and only its validity window compared afterwards.
 * - `options.roots`: ARK/ASK per product line; AMD's (shipped, Milan, Genoa, Turin) by default.
 * - `TeeVerdict = { valid, failures, claims }`: `valid` is `failures.length === 0`; failures are the
 *   shared `Failure` values (schemas/Evidence.ts) with types under `tee_attestation.` (src/tee/failures.ts);
 *   claims (Keylime's names plus chip_id, vmpl, product_line) only when valid, `{}` otherwise.
 * - Never throws and never reads a file or the network.
 * - Portable (src/tee/verify.ts and what it imports: no Node built-in); with the portable crypto
 *   port, call it inside `settleSignatures` (AMD's chain is RSA). This index also exports the
 *   Node-only parts (`loadVcekDirectory`, `signReport`).
 */
export { TEE_FAILURE, policyFailureType } from "./failures.js"
export { amdRoots, type ChainCache, makeChainCache, makeSnpRoots, type SnpRoots, SnpRootsError, verifyVcekChain } from "./snp/chain.js"
export { parseSnpReport, encodeSnpReport, type SnpReport, SnpReportError, type SnpReportFields } from "./snp/report.js"
export { verifyReportSignature } from "./snp/signature.js"
export { signReport } from "./snp/sign.js"
export { type SnpEvidenceInput, type SnpResult, verifySnpEvidence, type SnpVerifyOptions } from "./snp/verify.js"
export { decodeTcb, encodeTcb, type ProductLine, type TcbParts } from "./snp/tcb.js"
export { parseVcek, type Vcek, VcekError, vcekExtensions } from "./snp/vcek.js"
export { loadVcekDirectory, type VcekDirectory, VcekDirectoryError, vcekDirectoryOf, vcekEntry } from "./snp/vcekDirectory.js"
export { type TeeVerdict, type TeeVerifyOptions, verifyTeeEvidence } from "./verify.js"
