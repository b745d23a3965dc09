/**
 * `snp_vcek_dir`: VCEKs an operator fetched from AMD's key server ahead of time, so reports verify
 * without a network call. Read once at start-up (`loadVcekDirectory`); looked up per report by its
 * chip id and reported TCB. Files are indexed by what the certificate itself says (hwID and TCB
 * extensions), so a misnamed file cannot answer for another chip; name them after the key server's
 * request (`vcek/v1/<product>/<chip id hex>?blSPL=03&teeSPL=00&snpSPL=08&ucodeSPL=115`), e.g.
 * `<chip id hex>-blSPL=03-teeSPL=00-snpSPL=08-ucodeSPL=115.der` (`-fmcSPL=NN` for Turin), to keep the
 * directory readable. DER or PEM; other files are listed as skipped.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, Effect, Either } from "effect"
import { fromPem, isPemText } from "../../crypto/pem.js"
import { decodeTcb, tcbEquals } from "./tcb.js"
import { parseVcek, type Vcek } from "./vcek.js"

export interface VcekEntry {
  readonly file: string
  /** Base64 of the DER: the chain cache key. */
  readonly key: string
  readonly vcek: Vcek
}

export interface VcekDirectory {
  readonly dir: string
  readonly entries: ReadonlyArray<VcekEntry>
  readonly skipped: ReadonlyArray<{ readonly file: string; readonly reason: string }>
  /** The VCEK for a report's chip id and reported TCB (raw 8 bytes), if the directory has it. */
  readonly lookup: (chipId: Uint8Array, reportedTcb: Uint8Array) => VcekEntry | undefined
}

export class VcekDirectoryError extends Data.TaggedError("VcekDirectoryError")<{
  readonly dir: string
  readonly message: string
  readonly cause?: unknown
}> {}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

/** A directory from entries already in memory (tests, and what `loadVcekDirectory` builds). */
export const vcekDirectoryOf = (entries: ReadonlyArray<VcekEntry>, dir = "(memory)", skipped: VcekDirectory["skipped"] = []): VcekDirectory => {
  const byHwId = new Map<string, Array<VcekEntry>>()
  for (const e of entries) {
    const k = hex(e.vcek.hwId)
    const list = byHwId.get(k)
    if (list === undefined) byHwId.set(k, [e])
    else list.push(e)
  }
  return {
    dir,
    entries,
    skipped,
    lookup: (chipId, reportedTcb) => {
      // Milan and Genoa hwIDs are the whole 64-byte chip id; Turin's are its first 8 bytes.
      const candidates = [...(byHwId.get(hex(chipId)) ?? []), ...(byHwId.get(hex(chipId.subarray(0, 8))) ?? [])]
      return candidates.find((e) => tcbEquals(e.vcek.tcb, decodeTcb(reportedTcb, e.vcek.product)))
    }
  }
}

/** One entry from a file's bytes (DER, or PEM holding one certificate). */
export const vcekEntry = (file: string, bytes: Uint8Array): Either.Either<VcekEntry, string> => {
  const der = isPemText(bytes) ? fromPem(Buffer.from(bytes).toString("utf8")).find((b) => b.label === "CERTIFICATE")?.der : bytes
  if (der === undefined) return Either.left("PEM text without a CERTIFICATE block")
  return Either.mapBoth(parseVcek(der), {
    onLeft: (e) => e.message,
    onRight: (vcek) => ({ file, key: Buffer.from(vcek.der).toString("base64"), vcek })
  })
}

/** Reads every regular file of `dir` once (the verifier's start-up). */
export const loadVcekDirectory = (dir: string): Effect.Effect<VcekDirectory, VcekDirectoryError> =>
  Effect.try({
    try: () => {
      const entries: Array<VcekEntry> = []
      const skipped: Array<{ file: string; reason: string }> = []
      for (const name of fs.readdirSync(dir).sort()) {
        const file = path.join(dir, name)
        if (!fs.statSync(file).isFile()) continue
        const entry = vcekEntry(file, new Uint8Array(fs.readFileSync(file)))
        if (Either.isLeft(entry)) skipped.push({ file, reason: entry.left })
        else entries.push(entry.right)
      }
      return vcekDirectoryOf(entries, dir, skipped)
    },
    catch: (cause) => new VcekDirectoryError({ dir, message: `cannot read snp_vcek_dir ${dir}: ${(cause as Error)?.message ?? String(cause)}`, cause })
  }).pipe(Effect.withSpan("tee.loadVcekDirectory", { attributes: { dir } }))
