/**
 * The `example` policy's reference state (schemas/MbPolicy.ts) compiled once into the lookups the
 * evaluation needs: digests without "0x", key sets, the dbx index, kernel command lines as anchored
 * regular expressions, and attest's additions (platform events, kernels without an initrd). Keylime's
 * reference states compile to Keylime's rules.
 */
import { Either, ParseResult, Schema } from "effect"
import { MbRefState } from "../../schemas/MbPolicy.js"
import { GUID } from "./eventData.js"

export type Digest = ReadonlyMap<string, string>
export type KeySet = ReadonlySet<string>

export interface Kernel {
  readonly shim: string
  readonly grub: string
  readonly kernel: string | undefined
  readonly vmlinuz: string | undefined
  /** undefined = the boot loads no initrd. */
  readonly initrd: string | undefined
  readonly cmdline: RegExp
}

export interface PlatformEventRule {
  readonly pcr: number
  readonly type: string
  readonly digest: Digest
}

export interface ScrtmAndBiosRule {
  readonly scrtm: Digest
  readonly firmware: ReadonlyArray<Digest>
  /** undefined = no platform events allowed (a Keylime reference state). */
  readonly platform: ReadonlyArray<PlatformEventRule> | undefined
}

export interface Compiled {
  readonly secure: boolean
  readonly kernels: ReadonlyArray<Kernel>
  readonly scrtmAndBios: ReadonlyArray<ScrtmAndBiosRule>
  /** Some `scrtm_and_bios` entry lists platform events: collect them instead of refusing them. */
  readonly platformEvents: boolean
  /** undefined = accept anything once (no SecureBoot and an empty list in the refstate). */
  readonly pk: KeySet | undefined
  readonly kek: KeySet | undefined
  readonly db: KeySet | undefined
  /** Required dbx entries: SignatureData -> [SignatureOwner, index] (indexed to count distinct matches fast). */
  readonly dbx: { readonly byData: ReadonlyMap<string, ReadonlyArray<readonly [string, number]>>; readonly count: number } | undefined
  readonly vendorDb: KeySet | undefined
  readonly mokdig: ReadonlyArray<Digest>
  readonly mokxdig: ReadonlyArray<Digest>
}

/** tpm2-tools < 5.2 printed GUIDs byte-swapped; Keylime accepts both spellings, so do we. */
export const GLOBAL = new Set([GUID.globalVariable, "61dfe48b-ca93-d211-aa0d-00e098032b8c"])
export const IMAGE_DB = new Set([GUID.imageSecurityDatabase, "cbb219d7-3a3d-9645-a3bc-dad00e67656f"])
export const SHIM = new Set([GUID.shimLock, "50ab5d60-46e0-0043-abb6-3dd810dd8b23"])
export const X509: ReadonlyArray<string> = [GUID.certX509, "a159c0a5-e494-a74a-87b5-ab155c2bf072"]
export const SHA256: ReadonlyArray<string> = [GUID.certSha256, "2616c4c1-4c50-9240-aca9-41f936934328"]

const strip = (h: string) => h.slice(2)
const digestOf = (d: Readonly<Record<string, string>>): Digest => new Map(Object.entries(d).map(([a, v]) => [a, strip(v)]))
export const keyId = (owner: string, dataHex: string) => `${owner}/${dataHex}`

const decodeRefState = Schema.decodeUnknownEither(MbRefState)

const indexKeys = (list: ReadonlyArray<{ readonly SignatureOwner: string; readonly SignatureData: string }>) => {
  const byData = new Map<string, Array<readonly [string, number]>>()
  list.forEach((k, i) => {
    const data = strip(k.SignatureData)
    const owners = byData.get(data)
    if (owners === undefined) byData.set(data, [[k.SignatureOwner, i]])
    else owners.push([k.SignatureOwner, i])
  })
  return { byData, count: list.length }
}

const compile = (refstate: unknown): Either.Either<Compiled, string> => {
  const decoded = decodeRefState(refstate, { errors: "first" })
  if (Either.isLeft(decoded)) return Either.left(`refstate: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
  const r = decoded.right
  const secure = r.has_secureboot ?? true
  const kernels: Array<Kernel> = []
  for (const [i, k] of r.kernels.entries()) {
    if (secure && k.kernel_authcode_sha256 === undefined) return Either.left(`refstate kernels[${i}] lacks fields {'kernel_authcode_sha256'}`)
    if (!secure && k.vmlinuz_plain_sha256 === undefined) return Either.left(`refstate kernels[${i}] lacks fields {'vmlinuz_plain_sha256'}`)
    let cmdline: RegExp
    try {
      cmdline = new RegExp(`^(?:kernel_cmdline: ${k.kernel_cmdline})$`)
    } catch (e) {
      return Either.left(`refstate kernels[${i}].kernel_cmdline is not a valid regular expression: ${String(e)}`)
    }
    kernels.push({
      shim: strip(k.shim_authcode_sha256),
      grub: strip(k.grub_authcode_sha256),
      kernel: k.kernel_authcode_sha256 === undefined ? undefined : strip(k.kernel_authcode_sha256),
      vmlinuz: k.vmlinuz_plain_sha256 === undefined ? undefined : strip(k.vmlinuz_plain_sha256),
      initrd: k.initrd_plain_sha256 === undefined ? undefined : strip(k.initrd_plain_sha256),
      cmdline
    })
  }
  const keys = (list: ReadonlyArray<{ readonly SignatureOwner: string; readonly SignatureData: string }>): KeySet | undefined =>
    !secure && list.length === 0 ? undefined : new Set(list.map((s) => keyId(s.SignatureOwner, strip(s.SignatureData))))
  const scrtmAndBios = r.scrtm_and_bios.map((s) => ({
    scrtm: digestOf(s.scrtm),
    firmware: s.platform_firmware.map(digestOf),
    platform: s.platform_events?.map((p) => ({ pcr: p.pcr, type: p.event_type, digest: digestOf(p.digest) }))
  }))
  return Either.right({
    secure,
    kernels,
    scrtmAndBios,
    platformEvents: scrtmAndBios.some((s) => s.platform !== undefined),
    pk: keys(r.pk),
    kek: keys(r.kek),
    db: keys(r.db),
    dbx: !secure && r.dbx.length === 0 ? undefined : indexKeys(r.dbx),
    vendorDb: r.vendor_db === undefined || r.vendor_db.length === 0 ? undefined : keys(r.vendor_db),
    mokdig: r.mokdig.map(digestOf),
    mokxdig: r.mokxdig.map(digestOf)
  })
}

/** The verifier evaluates the same reference state every round: compile it once per object. */
const compiledCache = new WeakMap<object, Either.Either<Compiled, string>>()
export const compileRefState = (refstate: unknown): Either.Either<Compiled, string> => {
  if (typeof refstate !== "object" || refstate === null) return compile(refstate)
  let c = compiledCache.get(refstate)
  if (c === undefined) compiledCache.set(refstate, (c = compile(refstate)))
  return c
}

/** What the generator's classification runs with: every platform event collected, no key rules. */
export const classifyingRefState: Compiled = {
  secure: true,
  kernels: [],
  scrtmAndBios: [],
  platformEvents: true,
  pk: undefined,
  kek: undefined,
  db: undefined,
  dbx: undefined,
  vendorDb: undefined,
  mokdig: [],
  mokxdig: []
}
