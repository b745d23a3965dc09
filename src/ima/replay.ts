/** PCR 10 replay of a whole list per bank, without policy evaluation (tests, tools, the simulator). */
import { Either } from "effect"
import { emptyFields, ImaParseError, parseLineInto, TemplateBuffer } from "./entry.js"
import { concat } from "../crypto/encoding.js"
import { digestSize, type HashAlg, hashBytes, ones } from "./hash.js"

/**
 * Extends PCR 10 with every entry: `PCR = H(PCR ‖ H(template data))`, or `‖ 0xFF…` for a violation
 * (all-zero template hash). Returns the final value per bank, or the first unparsable line.
 */
export const replayPcr10 = (
  text: string,
  banks: ReadonlyArray<HashAlg>,
  initial?: Partial<Record<HashAlg, Uint8Array>>
): Either.Either<Record<string, Uint8Array>, ImaParseError> => {
  const pcrs: Array<Uint8Array> = banks.map((b) => new Uint8Array(initial?.[b] ?? new Uint8Array(digestSize(b))))
  const tb = new TemplateBuffer()
  const f = emptyFields()
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line === "") continue
    const reason = parseLineInto(line, 0, line.length, tb, f)
    if (reason !== undefined) return Either.left(new ImaParseError({ line: i + 1, reason }))
    const violation = /^0+$/.test(line.slice(f.thStart, f.thEnd))
    banks.forEach((b, k) => {
      const th = violation ? ones(b) : hashBytes(b, tb.buf.subarray(0, f.length))
      pcrs[k] = hashBytes(b, concat(pcrs[k]!, th))
    })
  }
  const out: Record<string, Uint8Array> = {}
  banks.forEach((b, k) => (out[b] = new Uint8Array(pcrs[k]!)))
  return Either.right(out)
}
