/**
 * EK certificates from NV (TCG EK Credential Profile indices): RSA 2048 at 0x1c00002; ECC P-256
 * at 0x1c0000a, then 0x1c00016 (where swtpm 0.7.1 puts its ECC EK certificate, a P-384 one).
 */
import { Effect, Option } from "effect"
import type { KeyAlg } from "../Tpm.js"
import { readOutput, runTool, type ToolContext } from "./run.js"

export const EK_CERT_INDICES: Record<KeyAlg, ReadonlyArray<string>> = {
  rsa: ["0x1c00002"],
  ecc: ["0x1c0000a", "0x1c00016"]
}

/** TPM_RC_HANDLE (0x18b): the NV index is not defined. Anything else is a real failure. */
const isUndefinedIndex = (detail: string | undefined): boolean => detail !== undefined && /0x0*18b\b/i.test(detail)

/**
 * NV areas are often larger than the certificate (zero padded); keep exactly the outer DER
 * SEQUENCE when its length is readable.
 */
export const trimDer = (bytes: Uint8Array): Uint8Array => {
  if (bytes.length < 2 || bytes[0] !== 0x30) return bytes
  const first = bytes[1]!
  let length: number
  let header: number
  if (first < 0x80) {
    length = first
    header = 2
  } else {
    const n = first & 0x7f
    if (n === 0 || n > 4 || bytes.length < 2 + n) return bytes
    length = 0
    for (let i = 0; i < n; i++) length = length * 256 + bytes[2 + i]!
    header = 2 + n
  }
  return header + length <= bytes.length ? bytes.slice(0, header + length) : bytes
}

export const readEkCertificate = (ctx: ToolContext, alg: KeyAlg) =>
  Effect.gen(function*() {
    for (const index of EK_CERT_INDICES[alg]) {
      const read = yield* Effect.either(runTool(ctx, "tpm2_nvread", [index, "-C", "o", "-o", "ekcert.der"]))
      if (read._tag === "Left") {
        if (isUndefinedIndex(read.left.detail)) continue
        return yield* read.left
      }
      return Option.some(trimDer(yield* readOutput(ctx, "ekcert.der")))
    }
    return Option.none<Uint8Array>()
  })
