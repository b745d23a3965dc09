/**
 * Which crypto port the engines use: node:crypto where it exists (the default, found at first use),
 * the portable one elsewhere, or whichever `useCrypto` chose (tests and benches run both; an app
 * may prefer the portable one on node too).
 *
 * `settleSignatures(f)` is the asynchronous variant of any synchronous engine call: with node it
 * runs `f` once; with the portable port it runs `f`, lets WebCrypto answer the RSA checks `f` asked
 * for, and runs `f` again, until `f` asks nothing new (twice for an RSA quote, once when every key
 * is ECDSA or no signature is checked). See docs/embedding.md.
 */
import { nodeCryptoPort } from "./node.js"
import type { CryptoPort } from "./port.js"
import { portableCryptoPort } from "./portable.js"

let active: CryptoPort | undefined

/** The port in use. */
export const cryptoPort = (): CryptoPort => (active ??= nodeCryptoPort() ?? portableCryptoPort())

/** Chooses the port; returns the one it replaces. */
export const useCrypto = (port: CryptoPort): CryptoPort => {
  const previous = cryptoPort()
  active = port
  return previous
}

/** Engine calls that still ask for new RSA checks after this many rounds are refused (a check whose answer changes what is checked next, without end). */
const MAX_ROUNDS = 8

export class SignaturesUnsettled extends Error {
  constructor(rounds: number) {
    super(`signature checks did not settle after ${rounds} rounds`)
    this.name = "SignaturesUnsettled"
  }
}

/** Runs a synchronous engine call until every signature check it makes is answered; its last result. */
export const settleSignatures = async <A>(f: () => A): Promise<A> => {
  const port = cryptoPort()
  for (let round = 1; ; round++) {
    const result = f()
    if (port.pendingChecks() === 0) return result
    if (round >= MAX_ROUNDS) throw new SignaturesUnsettled(round)
    await port.settle()
  }
}
