/**
 * Deterministic key material from the simulator's seed, as a real TPM derives its EK from the
 * endorsement primary seed: the same seed and label always give the same key.
 *
 * Bytes come from HMAC-SHA256 in counter mode keyed by the seed. RSA primes are drawn from that
 * stream and tested with OpenSSL's `checkPrimeSync`, so generation is deterministic yet native-fast.
 */
import { checkPrimeSync, createECDH, createHmac, createPrivateKey, type KeyObject } from "node:crypto"

/** An endless deterministic byte stream for (seed, label). */
export class Drbg {
  private counter = 0
  private buffer = new Uint8Array(0)
  private at = 0
  constructor(
    private readonly seed: Uint8Array,
    private readonly label: string
  ) {}

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n)
    let filled = 0
    while (filled < n) {
      if (this.at === this.buffer.length) {
        const counter = Buffer.alloc(4)
        counter.writeUInt32BE(this.counter++)
        this.buffer = new Uint8Array(createHmac("sha256", this.seed).update(this.label).update(counter).digest())
        this.at = 0
      }
      const take = Math.min(n - filled, this.buffer.length - this.at)
      out.set(this.buffer.subarray(this.at, this.at + take), filled)
      this.at += take
      filled += take
    }
    return out
  }
}

/** Derives `n` bytes for a purpose (HMAC-SHA256 counter mode). */
export const deriveBytes = (seed: Uint8Array, label: string, n: number): Uint8Array => new Drbg(seed, label).bytes(n)

const toBig = (b: Uint8Array): bigint => (b.length === 0 ? 0n : BigInt("0x" + Buffer.from(b).toString("hex")))

const toBytes = (v: bigint, size?: number): Uint8Array => {
  let hex = v.toString(16)
  if (hex.length % 2) hex = "0" + hex
  const raw = Buffer.from(hex, "hex")
  if (size === undefined || raw.length >= size) return new Uint8Array(raw)
  const out = new Uint8Array(size)
  out.set(raw, size - raw.length)
  return out
}

const b64url = (v: bigint, size?: number): string => Buffer.from(toBytes(v, size)).toString("base64url")

const modInverse = (a: bigint, m: bigint): bigint => {
  let [oldR, r] = [((a % m) + m) % m, m]
  let [oldS, s] = [1n, 0n]
  while (r !== 0n) {
    const q = oldR / r
    ;[oldR, r] = [r, oldR - q * r]
    ;[oldS, s] = [s, oldS - q * s]
  }
  return ((oldS % m) + m) % m
}

const gcd = (a: bigint, b: bigint): bigint => {
  while (b !== 0n) [a, b] = [b, a % b]
  return a
}

const E = 65537n

/** Odd primes below 2,000: a candidate divisible by one of them is composite (~85% of odd candidates). */
const SMALL_PRIMES: ReadonlyArray<number> = (() => {
  const out: Array<number> = []
  for (let n = 3; n < 2000; n += 2) if (out.every((p) => p * p > n ? true : n % p !== 0)) out.push(n)
  return out
})()

/**
 * A prime of exactly `bits` bits with its top two bits set (so p·q has 2·bits bits) and gcd(p-1, e) = 1.
 * Candidates are walked by 2 from a random start; their residues modulo the small primes are kept
 * up to date as numbers, so composites with a small factor are skipped without asking OpenSSL. The
 * skipped ones would fail `checkPrimeSync` anyway, so the key for a seed is the same as without it.
 */
const prime = (drbg: Drbg, bits: number): bigint => {
  const top = (1n << BigInt(bits - 1)) | (1n << BigInt(bits - 2))
  for (;;) {
    let candidate = toBig(drbg.bytes(bits / 8)) | top | 1n
    const residues = SMALL_PRIMES.map((p) => Number(candidate % BigInt(p)))
    // Walk odd numbers from the random start (fewer DRBG draws); restart on overflow.
    for (let i = 0; i < 4096; i++, candidate += 2n) {
      if (i > 0) for (let j = 0; j < residues.length; j++) residues[j] = (residues[j]! + 2) % SMALL_PRIMES[j]!
      if (candidate >> BigInt(bits) !== 0n) break
      if (residues.includes(0)) continue
      if (gcd(candidate - 1n, E) !== 1n) continue
      if (checkPrimeSync(candidate)) return candidate
    }
  }
}

/** Keys derived so far: the same (seed, label, bits) always gives the same key, and a prime search costs ~0.3 s. */
const derivedRsa = new Map<string, KeyObject>()
const DERIVED_RSA_KEPT = 256

/** Deterministic RSA private key of `bits` (2048, 3072, …), e = 65537 (made once per process). */
export const deriveRsaKey = (seed: Uint8Array, label: string, bits: number): KeyObject => {
  const key = `${Buffer.from(seed).toString("hex")}:${bits}:${label}`
  const known = derivedRsa.get(key)
  if (known !== undefined) return known
  const made = searchRsaKey(seed, label, bits)
  if (derivedRsa.size >= DERIVED_RSA_KEPT) derivedRsa.delete(derivedRsa.keys().next().value!)
  derivedRsa.set(key, made)
  return made
}

const searchRsaKey = (seed: Uint8Array, label: string, bits: number): KeyObject => {
  const drbg = new Drbg(seed, `rsa${bits}:${label}`)
  for (;;) {
    const p = prime(drbg, bits / 2)
    const q = prime(drbg, bits / 2)
    if (p === q) continue
    const n = p * q
    const phi = (p - 1n) * (q - 1n)
    const d = modInverse(E, phi)
    return createPrivateKey({
      format: "jwk",
      key: {
        kty: "RSA",
        n: b64url(n),
        e: b64url(E),
        d: b64url(d),
        p: b64url(p),
        q: b64url(q),
        dp: b64url(d % (p - 1n)),
        dq: b64url(d % (q - 1n)),
        qi: b64url(modInverse(q, p))
      }
    })
  }
}

const curves = {
  256: { crv: "P-256", openssl: "prime256v1", size: 32, n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n },
  384: {
    crv: "P-384",
    openssl: "secp384r1",
    size: 48,
    n: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n
  }
} as const

/** Deterministic ECC private key on P-256 or P-384: d uniform in [1, n-1] from the stream. */
export const deriveEcKey = (seed: Uint8Array, label: string, bits: 256 | 384): KeyObject => {
  const c = curves[bits]
  // 8 extra bytes make the modulo bias negligible.
  const d = (toBig(deriveBytes(seed, `ecc${bits}:${label}`, c.size + 8)) % (c.n - 1n)) + 1n
  const ecdh = createECDH(c.openssl)
  ecdh.setPrivateKey(toBytes(d, c.size))
  const point = ecdh.getPublicKey()
  return createPrivateKey({
    format: "jwk",
    key: {
      kty: "EC",
      crv: c.crv,
      d: b64url(d, c.size),
      x: Buffer.from(point.subarray(1, 1 + c.size)).toString("base64url"),
      y: Buffer.from(point.subarray(1 + c.size)).toString("base64url")
    }
  })
}
