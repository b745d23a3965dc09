/**
 * The work bench/portable.ts measures, the same in node and in the browser (bundled by
 * bench/_portableBrowser.ts): an IMA list verified against its policy (entries/s), and distinct
 * Keylime quotes verified with their AK and nonce, their signature checks answered in batches as
 * `settleSignatures` answers them (quotes/s).
 */
import { settleSignatures } from "../src/crypto/active.js"
import type { CompiledPolicy } from "../src/ima/policy.js"
import { verifyIma } from "../src/ima/verify.js"
import { verifyQuoteString } from "../src/tpm/verifyQuote.js"

const now = (): number => globalThis.performance.now()

/** IMA entries verified per second over `rounds` passes of the whole list. */
export const imaRate = (list: string, policy: CompiledPolicy, rounds: number): number => {
  let entries = 0
  const start = now()
  for (let r = 0; r < rounds; r++) {
    const result = verifyIma({ list, startEntry: 0, policy, banks: ["sha256"] })
    if (result.failures.length > 0) throw new Error(`IMA verification failed in the bench: ${result.failures[0]!.type}`)
    entries += result.entries
  }
  return (entries * 1000) / (now() - start)
}

export interface BenchQuote {
  readonly quote: string
  readonly nonce: Uint8Array
}

/** Quotes verified per second: each once, `batch` at a time through settleSignatures. */
export const quoteRate = async (ak: Uint8Array, quotes: ReadonlyArray<BenchQuote>, batch: number): Promise<number> => {
  const start = now()
  for (let i = 0; i < quotes.length; i += batch) {
    const chunk = quotes.slice(i, i + batch)
    const verdicts = await settleSignatures(() => chunk.map((q) => verifyQuoteString(ak, q.quote, q.nonce, { hashAlg: "sha256" })))
    for (const v of verdicts) if (v._tag === "Left") throw new Error(`a quote did not verify in the bench: ${v.left.check}: ${v.left.message}`)
  }
  return (quotes.length * 1000) / (now() - start)
}
