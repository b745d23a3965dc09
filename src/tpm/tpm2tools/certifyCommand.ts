/**
 * Raw TPM2_Certify for `tpm2_send`: tpm2-tools 5.4's `tpm2_certify` hard-codes qualifyingData
 * (`00ff55aa`), so the push-model proof of possession (AK certifies itself over the verifier's
 * nonce) is sent as a command buffer instead (tpm-facts.md §1.9).
 */
import type { Either } from "effect"
import { parseWith, Reader, Writer } from "../bytes.js"
import { TPM_ALG } from "../constants.js"
import type { TpmParseError } from "../errors.js"

const TPM_ST_SESSIONS = 0x8002
const TPM_CC_CERTIFY = 0x00000148
const TPM_RS_PW = 0x40000009

/** One empty password session: handle, nonce(0), attributes 0, hmac(0). */
const passwordSession = (w: Writer) => w.u32(TPM_RS_PW).u16(0).u8(0).u16(0)

/** TPM2_Certify(objectHandle, signHandle, qualifyingData, inScheme = TPM_ALG_NULL) with two password sessions. */
export const certifyCommand = (objectHandle: number, signHandle: number, qualifyingData: Uint8Array): Uint8Array => {
  const body = new Writer(64)
  body.u32(TPM_CC_CERTIFY).u32(objectHandle).u32(signHandle)
  body.u32(18)
  passwordSession(body)
  passwordSession(body)
  body.tpm2b(qualifyingData).u16(TPM_ALG.null)
  const payload = body.finish()
  return new Writer(payload.length + 6).u16(TPM_ST_SESSIONS).u32(payload.length + 6).bytes(payload).finish()
}

export type CertifyResponse =
  | { readonly _tag: "Ok"; readonly attest: Uint8Array; readonly signature: Uint8Array }
  | { readonly _tag: "TpmRc"; readonly rc: number }

/**
 * Splits a TPM2_Certify response: header, parameterSize, TPM2B_ATTEST, TPMT_SIGNATURE (the rest of
 * the parameter area), then the session area, which is ignored.
 */
export const parseCertifyResponse = (rsp: Uint8Array): Either.Either<CertifyResponse, TpmParseError> =>
  parseWith("TPM2_Certify response", rsp, (r) => {
    const tag = r.u16("response tag")
    const size = r.u32("response size")
    if (size !== rsp.length) r.fail(`size field ${size} but ${rsp.length} bytes`)
    const rc = r.u32("response code")
    if (rc !== 0) return { _tag: "TpmRc" as const, rc }
    if (tag !== TPM_ST_SESSIONS) r.fail(`tag 0x${tag.toString(16)} where a session response was expected`)
    const parameterSize = r.u32("parameterSize")
    const params = r.bytes(parameterSize, "parameters")
    // A reader bounded by parameterSize: the signature is whatever follows the attest inside it.
    const p = new Reader(params, "TPM2_Certify parameters")
    const attest = new Uint8Array(p.tpm2b("TPM2B_ATTEST"))
    const signature = new Uint8Array(p.bytes(p.remaining, "TPMT_SIGNATURE"))
    if (signature.length < 4) p.fail("signature too short", "TPMT_SIGNATURE")
    return { _tag: "Ok" as const, attest, signature }
  })
