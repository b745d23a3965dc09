/**
 * Elliptic curves with @noble/curves (audited, pure JavaScript): ECDSA over a digest the caller
 * has (both ports: IMA file signatures sign the file digest itself, which node:crypto cannot check),
 * ECDSA for the portable port, and EC point checks and decompression.
 */
import { p256, p384, p521 } from "@noble/curves/nist.js"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { ecPoint } from "./spki.js"
import { CURVE_SIZES, type Curve, type PublicKey } from "./port.js"

const CURVES = { "P-256": p256, "P-384": p384, "P-521": p521, secp256k1 } as const

const toBytes = (v: bigint, size: number): Uint8Array => {
  const out = new Uint8Array(size)
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}

/** The affine point of an encoded point (uncompressed or compressed) on `curve`, or undefined when it is not one. */
export const pointOf = (curve: Curve, encoded: Uint8Array): { readonly x: Uint8Array; readonly y: Uint8Array } | undefined => {
  try {
    const p = CURVES[curve].Point.fromBytes(encoded)
    p.assertValidity()
    const a = p.toAffine()
    const size = CURVE_SIZES[curve]
    return { x: toBytes(a.x, size), y: toBytes(a.y, size) }
  } catch {
    return undefined
  }
}

/** ECDSA (r ‖ s or DER) over `digest`, as OpenSSL checks it: high-S values accepted, the digest truncated to the order's length. */
export const nobleVerifyDigest = (key: PublicKey, digest: Uint8Array, signature: Uint8Array, format: "der" | "compact" = "der"): boolean => {
  if (key.type !== "ec") return false
  try {
    return CURVES[key.curve].verify(signature, digest, ecPoint(key), { prehash: false, lowS: false, format })
  } catch {
    return false
  }
}
