/**
 * ECDSA verification over a digest the caller already has. IMA v2 signatures sign the file digest
 * itself and node:crypto can only verify after hashing the message again, so the curve arithmetic
 * is done here with BigInt. Only a handful of ima-sig entries per list reach this; speed is not a goal.
 */
import type { KeyObject } from "node:crypto"

interface Curve {
  readonly p: bigint
  readonly a: bigint
  readonly b: bigint
  readonly gx: bigint
  readonly gy: bigint
  readonly n: bigint
}

const P256: Curve = {
  p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
  a: 0xffffffff00000001000000000000000000000000fffffffffffffffffffffffcn,
  b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  gx: 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
  gy: 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
  n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n
}

const P384: Curve = {
  p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffffn,
  a: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000fffffffcn,
  b: 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aefn,
  gx: 0xaa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7n,
  gy: 0x3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5fn,
  n: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n
}

const SECP256K1: Curve = {
  p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn,
  a: 0n,
  b: 7n,
  gx: 0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798n,
  gy: 0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8n,
  n: 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
}

const curves: Record<string, Curve> = { prime256v1: P256, secp384r1: P384, secp256k1: SECP256K1 }

export const supportedCurve = (name: string | undefined): boolean => name !== undefined && name in curves

const mod = (x: bigint, m: bigint): bigint => {
  const r = x % m
  return r < 0n ? r + m : r
}

const inv = (x: bigint, m: bigint): bigint => {
  let [a, b, u, v] = [mod(x, m), m, 1n, 0n]
  while (b !== 0n) {
    const q = a / b
    ;[a, b] = [b, a - q * b]
    ;[u, v] = [v, u - q * v]
  }
  return mod(u, m)
}

type Point = readonly [bigint, bigint] | null

const add = (c: Curve, P: Point, Q: Point): Point => {
  if (P === null) return Q
  if (Q === null) return P
  const [x1, y1] = P
  const [x2, y2] = Q
  let l: bigint
  if (x1 === x2) {
    if (mod(y1 + y2, c.p) === 0n) return null
    l = mod((3n * x1 * x1 + c.a) * inv(2n * y1, c.p), c.p)
  } else {
    l = mod((y2 - y1) * inv(x2 - x1, c.p), c.p)
  }
  const x3 = mod(l * l - x1 - x2, c.p)
  return [x3, mod(l * (x1 - x3) - y1, c.p)]
}

const mul = (c: Curve, k: bigint, P: Point): Point => {
  let R: Point = null
  let A = P
  while (k > 0n) {
    if (k & 1n) R = add(c, R, A)
    A = add(c, A, A)
    k >>= 1n
  }
  return R
}

const toBig = (b: Uint8Array): bigint => (b.length === 0 ? 0n : BigInt("0x" + Buffer.from(b).toString("hex")))

/** DER `SEQUENCE { INTEGER r, INTEGER s }` → [r, s]; undefined if malformed. */
export const parseDerSignature = (der: Uint8Array): readonly [bigint, bigint] | undefined => {
  let i = 0
  const len = (): number | undefined => {
    if (i >= der.length) return undefined
    const first = der[i++]!
    if (first < 0x80) return first
    const n = first & 0x7f
    if (n === 0 || n > 2 || i + n > der.length) return undefined
    let v = 0
    for (let k = 0; k < n; k++) v = (v << 8) | der[i++]!
    return v
  }
  if (der[i++] !== 0x30) return undefined
  const seqLen = len()
  if (seqLen === undefined || i + seqLen !== der.length) return undefined
  const int = (): bigint | undefined => {
    if (der[i++] !== 0x02) return undefined
    const l = len()
    if (l === undefined || l === 0 || i + l > der.length) return undefined
    const v = toBig(der.subarray(i, i + l))
    i += l
    return v
  }
  const r = int()
  const s = int()
  if (r === undefined || s === undefined || i !== der.length) return undefined
  return [r, s]
}

/** Verifies a DER ECDSA signature over `digest` (already hashed) with an EC public key. */
export const verifyEcdsaPrehashed = (key: KeyObject, digest: Uint8Array, derSig: Uint8Array): boolean => {
  const c = curves[key.asymmetricKeyDetails?.namedCurve ?? ""]
  if (c === undefined) return false
  const rs = parseDerSignature(derSig)
  if (rs === undefined) return false
  const [r, s] = rs
  if (r <= 0n || r >= c.n || s <= 0n || s >= c.n) return false
  const jwk = key.export({ format: "jwk" })
  if (jwk.x === undefined || jwk.y === undefined) return false
  const Q: Point = [toBig(Buffer.from(jwk.x, "base64url")), toBig(Buffer.from(jwk.y, "base64url"))]
  const nBits = c.n.toString(2).length
  let e = toBig(digest)
  const excess = digest.length * 8 - nBits
  if (excess > 0) e >>= BigInt(excess)
  const w = inv(s, c.n)
  const R = add(c, mul(c, mod(e * w, c.n), [c.gx, c.gy]), mul(c, mod(r * w, c.n), Q))
  return R !== null && mod(R[0], c.n) === r
}
