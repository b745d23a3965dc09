/**
 * SEV-SNP product lines and TCB_VERSION (the 8-byte security patch levels in a report's
 * current/reported/committed/launch TCB fields and in a VCEK's extensions). The byte layout depends
 * on the product line (AMD SEV-SNP ABI spec, "TCB_VERSION"):
 *   Milan, Genoa: [0] boot loader, [1] TEE, [2..5] reserved, [6] SNP firmware, [7] microcode
 *   Turin:        [0] FMC, [1] boot loader, [2] TEE, [3] SNP firmware, [4..6] reserved, [7] microcode
 */

export type ProductLine = "Milan" | "Genoa" | "Turin"
export const PRODUCT_LINES: ReadonlyArray<ProductLine> = ["Milan", "Genoa", "Turin"]

/** The product line a VCEK's productName names ("Milan-B0", "Genoa-B1", "Turin"), if attest knows it. */
export const productLineOf = (productName: string): ProductLine | undefined =>
  PRODUCT_LINES.find((p) => productName === p || productName.startsWith(`${p}-`))

export interface TcbParts {
  readonly bootloader: number
  readonly tee: number
  readonly snp: number
  readonly microcode: number
  /** Turin and later only. */
  readonly fmc?: number
}

export const TCB_PART_NAMES = ["bootloader", "tee", "snp", "microcode", "fmc"] as const

const LAYOUT: Readonly<Record<ProductLine, { readonly bootloader: number; readonly tee: number; readonly snp: number; readonly microcode: number; readonly fmc?: number }>> = {
  Milan: { bootloader: 0, tee: 1, snp: 6, microcode: 7 },
  Genoa: { bootloader: 0, tee: 1, snp: 6, microcode: 7 },
  Turin: { fmc: 0, bootloader: 1, tee: 2, snp: 3, microcode: 7 }
}

/** The parts of an 8-byte TCB_VERSION, as `product`'s layout places them. */
export const decodeTcb = (raw: Uint8Array, product: ProductLine): TcbParts => {
  const l = LAYOUT[product]
  const parts = { bootloader: raw[l.bootloader]!, tee: raw[l.tee]!, snp: raw[l.snp]!, microcode: raw[l.microcode]! }
  return l.fmc === undefined ? parts : { fmc: raw[l.fmc]!, ...parts }
}

/** The 8-byte TCB_VERSION of `parts` in `product`'s layout (reserved bytes zero). */
export const encodeTcb = (parts: TcbParts, product: ProductLine): Uint8Array => {
  const l = LAYOUT[product]
  const raw = new Uint8Array(8)
  raw[l.bootloader] = parts.bootloader
  raw[l.tee] = parts.tee
  raw[l.snp] = parts.snp
  raw[l.microcode] = parts.microcode
  if (l.fmc !== undefined) raw[l.fmc] = parts.fmc ?? 0
  return raw
}

export const tcbEquals = (a: TcbParts, b: TcbParts): boolean =>
  a.bootloader === b.bootloader && a.tee === b.tee && a.snp === b.snp && a.microcode === b.microcode && (a.fmc ?? 0) === (b.fmc ?? 0)

/** "bootloader=3 tee=0 snp=8 microcode=115" for messages. */
export const formatTcb = (t: TcbParts): string =>
  TCB_PART_NAMES.flatMap((k) => (t[k] === undefined ? [] : [`${k}=${t[k]}`])).join(" ")
