import { describe, expect, it } from "vitest"
import { deriveRsaKey } from "../../src/tpm/simulator/derive.js"

describe("simulator key derivation", () => {
  it("gives the same RSA key for a seed as before the small-prime sieve (a simulated TPM keeps its EK across versions)", () => {
    // modulus prefixes recorded with the plain checkPrimeSync walk, before the sieve was added
    const expected = ["xUMsuivgvUUQU6x6RlfjnEZqkWqMrD514AaeI15O", "1FDF7BErFCigdoKTFKH_0bRxcOvlb0reUADm4dbj", "zpGCqehQFx8_0WE0kkOzuS8GXbYOxk7uTgfhN-lU"]
    const got = [0, 1, 2].map((i) => String(deriveRsaKey(new Uint8Array(32).fill(i), "ek", 2048).export({ format: "jwk" }).n).slice(0, 40))
    expect(got).toEqual(expected)
  })

  it("makes a usable 2048-bit key whose modulus has exactly 2048 bits", () => {
    const key = deriveRsaKey(new Uint8Array(32).fill(7), "ak", 2048)
    expect(key.asymmetricKeyDetails?.modulusLength).toEqual(2048)
  })
})
