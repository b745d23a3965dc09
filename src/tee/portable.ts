/**
 * attest/tee: SEV-SNP evidence verified offline, portable (no Node built-in): `verifyTeeEvidence`
 * (the `verify/evidence` TEE request) and `verifySnpEvidence` (a report and its VCEK), AMD's roots,
 * the chain cache, the report and VCEK codecs. With the portable crypto port, run them inside
 * `settleSignatures` (AMD's chain is RSASSA-PSS, WebCrypto's). The Node-only parts (`snp_vcek_dir`,
 * signing test reports) are in src/tee/index.ts.
 */
export { TEE_FAILURE, policyFailureType } from "./failures.js"
export { amdRoots, type ChainCache, makeChainCache, makeSnpRoots, type SnpRoots, SnpRootsError, verifyVcekChain } from "./snp/chain.js"
export { encodeSnpReport, parseSnpReport, type SnpReport, SnpReportError, type SnpReportFields } from "./snp/report.js"
export { verifyReportSignature } from "./snp/signature.js"
export { type SnpEvidenceInput, type SnpResult, verifySnpEvidence, type SnpVerifyOptions } from "./snp/verify.js"
export { decodeTcb, encodeTcb, type ProductLine, type TcbParts } from "./snp/tcb.js"
export { parseVcek, type Vcek, VcekError, vcekExtensions } from "./snp/vcek.js"
export { type TeeVerdict, type TeeVerifyOptions, verifyTeeEvidence } from "./verify.js"
