/**
 * The engines' vector tests run once per crypto port (src/crypto): node:crypto, and the portable one
 * (@noble/hashes, @noble/curves, WebCrypto) that browsers get. `eachCryptoPort(name, body)` is a
 * describe block per port, with that port in use while its tests run; `settled(f)` runs an engine
 * call with its RSA checks answered (with node it is `f()`; the portable port asks WebCrypto).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { nodeCryptoPort } from "../../src/crypto/node.js"
import { cryptoPort, settleSignatures, useCrypto } from "../../src/crypto/active.js"
import type { CryptoPort } from "../../src/crypto/port.js"
import { portableCryptoPort } from "../../src/crypto/portable.js"

export const cryptoPorts: ReadonlyArray<readonly [string, CryptoPort]> = [
  ["node", nodeCryptoPort()!],
  ["portable", portableCryptoPort()]
]

/** `body` as one describe block per crypto port, that port in use while its tests run. */
export const eachCryptoPort = (name: string, body: (port: CryptoPort) => void): void => {
  for (const [portName, port] of cryptoPorts) {
    describe(`${name} (${portName} crypto)`, () => {
      let previous: CryptoPort | undefined
      beforeAll(() => {
        previous = useCrypto(port)
      })
      afterAll(() => {
        if (previous !== undefined) useCrypto(previous)
      })
      it(`runs with the ${portName} crypto port`, () => expect(cryptoPort().name).toBe(port.name))
      body(port)
    })
  }
}

/** An engine call with every signature check answered (a Promise). */
export const settled = <A>(f: () => A): Promise<A> => settleSignatures(f)
