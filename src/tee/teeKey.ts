/**
 * The TEE's public key as the request gives it: the affine coordinates x and y of a NIST curve
 * point. The curve follows from the coordinate length; the point must be on it. Checked with plain
 * BigInt arithmetic (y² = x³ − 3x + b mod p): importing the key through node:crypto costs as much as
 * the report's signature check.
 */
import { toHex } from "../crypto/encoding.js"

interface Curve {
  readonly name: string
  readonly p: bigint
  readonly b: bigint
}

const CURVES: ReadonlyMap<number, Curve> = new Map([
  [32, {
    name: "P-256",
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn
  }],
  [48, {
    name: "P-384",
    p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffffn,
    b: 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aefn
  }],
  [66, {
    name: "P-521",
    p: (1n << 521n) - 1n,
    b: 0x0051953eb9618e1c9a1f929a21a0b68540eea2da725b99b315f3b8b489918ef109e156193951ec7e937b1652c0bd3bb1bf073573df883d2c34f1ef451fd46b503f00n
  }]
])

const toBigInt = (b: Uint8Array): bigint => (b.length === 0 ? 0n : BigInt(`0x${toHex(b)}`))

/** The curve's name when (x, y) is a point on the NIST curve of their length, otherwise why not. */
export const teeKeyCurve = (x: Uint8Array, y: Uint8Array): { readonly curve: string } | { readonly reason: string } => {
  const curve = CURVES.get(x.length)
  if (curve === undefined || y.length !== x.length) {
    return { reason: `coordinates of ${x.length} and ${y.length} bytes are not those of a P-256, P-384 or P-521 point` }
  }
  const { p, b } = curve
  const X = toBigInt(x)
  const Y = toBigInt(y)
  if (X >= p || Y >= p) return { reason: `a coordinate is not below the ${curve.name} field prime` }
  const rhs = (((X * X % p) * X - 3n * X + b) % p + p) % p
  return (Y * Y) % p === rhs ? { curve: curve.name } : { reason: `(x, y) is not a point on ${curve.name}` }
}
