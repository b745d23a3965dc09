/** bench/portable.ts's work in a browser: bundled by esbuild for Chromium, called through `globalThis.attestBench`. */
import { Either } from "effect"
import { useCrypto } from "../src/crypto/active.js"
import { base64Bytes } from "../src/crypto/encoding.js"
import { makePortableCryptoPort } from "../src/crypto/portable.js"
import { loadRuntimePolicy } from "../src/ima/load.js"
import { imaRate, quoteRate } from "./_portableWork.js"

;(globalThis as Record<string, unknown>)["attestBench"] = {
  ima: (list: string, policy: string, rounds: number) => {
    useCrypto(makePortableCryptoPort())
    return imaRate(list, Either.getOrThrow(loadRuntimePolicy(policy)).policy, rounds)
  },
  quotes: (ak: string, quotes: ReadonlyArray<{ readonly quote: string; readonly nonce: string }>, batch: number) => {
    // a fresh port: no check answered by an earlier round
    useCrypto(makePortableCryptoPort())
    return quoteRate(base64Bytes(ak), quotes.map((q) => ({ quote: q.quote, nonce: base64Bytes(q.nonce) })), batch)
  }
}
