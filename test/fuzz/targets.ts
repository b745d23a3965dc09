/**
 * Every fuzz target: its name (`npm run fuzz -- <name>`, the corpus folder test/fuzz/corpus/<name>/),
 * the test file that runs it, and what it checks. Plain data, so scripts/fuzz.ts can list the
 * targets without loading vitest.
 */
export const FUZZ_TARGETS = {
  // --- parsers of bytes and text: a typed error, never a throw ----------------------------------
  "tpm-attest": { file: "test/fuzz/tpm.fuzz.test.ts", about: "TPMS_ATTEST (quote, certify) bytes" },
  "tpm-public": { file: "test/fuzz/tpm.fuzz.test.ts", about: "TPM2B_PUBLIC / TPMT_PUBLIC bytes and the key they carry" },
  "tpm-signature": { file: "test/fuzz/tpm.fuzz.test.ts", about: "TPMT_SIGNATURE bytes" },
  "tpm-pcrs": { file: "test/fuzz/tpm.fuzz.test.ts", about: "TPML_PCR_SELECTION and tpm2-tools PCR blobs" },
  "tpm-quote-string": { file: "test/fuzz/tpm.fuzz.test.ts", about: "Keylime quote strings through decode and verify" },
  "tpm-credential": { file: "test/fuzz/tpm.fuzz.test.ts", about: "credential files, TPM2_Certify responses, EK certificates" },
  "ima-list": { file: "test/fuzz/formats.fuzz.test.ts", about: "IMA measurement lists (ima, ima-ng, ima-sig, ima-buf) and signature headers" },
  "ima-policy": { file: "test/fuzz/formats.fuzz.test.ts", about: "runtime policies: the fast scan agrees with JSON.parse, typed errors" },
  "boot-event-log": { file: "test/fuzz/formats.fuzz.test.ts", about: "UEFI event logs (binary and base64)" },
  "snp-report": { file: "test/fuzz/formats.fuzz.test.ts", about: "SEV-SNP reports, VCEK certificates and TEE evidence requests" },
  "ear-token": { file: "test/fuzz/formats.fuzz.test.ts", about: "EAR tokens, JWKS documents and verdict facts" },
  "dsse": { file: "test/fuzz/formats.fuzz.test.ts", about: "DSSE envelopes and detached signatures" },
  "der": { file: "test/fuzz/formats.fuzz.test.ts", about: "DER/X.509 certificates, CRLs, public keys" },
  "json-body": { file: "test/fuzz/formats.fuzz.test.ts", about: "the servers' JSON depth check agrees with JSON.parse" },
  "agent-zip": { file: "test/fuzz/formats.fuzz.test.ts", about: "the agent's payload zip" },
  // --- changed signed structures: always refused -------------------------------------------------
  "quote-tamper": { file: "test/fuzz/tamper.fuzz.test.ts", about: "a quote with a changed byte, PCR value or nonce is refused" },
  "certify-tamper": { file: "test/fuzz/tamper.fuzz.test.ts", about: "a certify attestation with a changed byte or nonce is refused" },
  "snp-tamper": { file: "test/fuzz/tamper.fuzz.test.ts", about: "a SEV-SNP report with a changed byte is refused" },
  "ear-tamper": { file: "test/fuzz/tamper.fuzz.test.ts", about: "an EAR with a changed character is refused unless it decodes to the same token" },
  "evidence-tamper": { file: "test/fuzz/verifier.fuzz.test.ts", about: "verify/evidence over HTTPS refuses a quote with a changed bit or nonce" },
  "dsse-tamper": { file: "test/fuzz/tamper.fuzz.test.ts", about: "a DSSE-signed policy with a changed payload or signature is refused" },
  // --- HTTP routes over HTTPS: no 5xx, the envelope, nothing stored after a refusal ---------------
  "registrar-routes": { file: "test/fuzz/registrar.fuzz.test.ts", about: "the registrar's routes" },
  "verifier-v2-routes": { file: "test/fuzz/verifier.fuzz.test.ts", about: "the verifier's Keylime routes (v2.x)" },
  "verifier-v3-routes": { file: "test/fuzz/verifier.fuzz.test.ts", about: "the verifier's v3 JSON:API routes" },
  "agent-routes": { file: "test/fuzz/agent.fuzz.test.ts", about: "the agent's routes" },
  "dashboard-routes": { file: "test/fuzz/dashboard.fuzz.test.ts", about: "the dashboard's pages and API" }
} as const satisfies Record<string, { readonly file: string; readonly about: string }>

export type FuzzTargetName = keyof typeof FUZZ_TARGETS
