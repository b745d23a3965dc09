/**
 * Decodes `tpm2_pcrread` YAML (stdout) into PCR values:
 *   sha1:
 *     0 : 0x00…
 *     16: 0x00…
 * Only the bank/PCR lines are read; anything else is an error naming the line.
 */
import { Either } from "effect"
import { fromHex } from "../bytes.js"
import { digestSize, hashAlgFromName } from "../hashAlg.js"
import type { HashAlg, PcrSelection, PcrValues } from "../Tpm.js"

export const parsePcrReadYaml = (text: string, selection: PcrSelection): Either.Either<PcrValues, string> => {
  const banks = new Map<HashAlg, Map<number, Uint8Array>>()
  let current: Map<number, Uint8Array> | undefined
  let currentAlg: HashAlg | undefined
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd()
    if (line.trim() === "") continue
    const bank = /^\s*([a-z0-9]+):\s*$/.exec(line)
    if (bank) {
      const alg = hashAlgFromName(bank[1]!)
      if (alg === undefined) return Either.left(`unknown bank in pcrread output: ${line}`)
      currentAlg = alg
      current = new Map()
      banks.set(alg, current)
      continue
    }
    const pcr = /^\s*(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$/.exec(line)
    if (pcr && current && currentAlg) {
      const value = fromHex(pcr[2]!)
      if (value === undefined || value.length !== digestSize(currentAlg)) {
        return Either.left(`bad ${currentAlg} digest in pcrread output: ${line}`)
      }
      current.set(Number(pcr[1]), value)
      continue
    }
    return Either.left(`unexpected pcrread output line: ${line}`)
  }
  const out: Array<{ hash: HashAlg; values: ReadonlyMap<number, Uint8Array> }> = []
  for (const sel of selection) {
    const got = banks.get(sel.hash)
    const values = new Map<number, Uint8Array>()
    for (const index of [...sel.pcrs].sort((a, b) => a - b)) {
      const v = got?.get(index)
      if (v === undefined) return Either.left(`pcrread returned no ${sel.hash} PCR ${index} (bank not active?)`)
      values.set(index, v)
    }
    out.push({ hash: sel.hash, values })
  }
  return Either.right(out)
}

/** `sha1:0,1,10+sha256:0,16` for tpm2_pcrread / tpm2_quote `-l`. */
export const selectionArg = (selection: PcrSelection): string =>
  selection.map((s) => `${s.hash}:${[...s.pcrs].sort((a, b) => a - b).join(",")}`).join("+")
