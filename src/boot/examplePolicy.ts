/**
 * Keylime's `example` measured-boot policy (keylime/mba/elchecking/example.py) over its reference
 * state (schemas/MbPolicy.ts), as plain code: every event is dispatched on (PCRIndex, EventType);
 * events that only need to be well-formed are accepted (some at most once); PK/KEK/db must hold only
 * allowed keys and dbx at least the required ones; S-CRTM, firmware blobs, boot applications, the
 * initrd, vmlinuz and the kernel command line are collected and checked at the end against one of
 * the allowed `scrtm_and_bios` entries and one of the allowed `kernels`.
 * Reasons name the event (index, PCR, type) so an operator can act on them.
 */
import { createHash } from "node:crypto"
import { Either, ParseResult, Schema } from "effect"
import { MbRefState } from "../../schemas/MbPolicy.js"
import { GUID } from "./eventData.js"
import type { BootEvent, EventLog } from "./eventLog.js"
import { EV } from "./eventTypes.js"
import type { MbPolicy } from "./policy.js"
import { toHex } from "./text.js"

type Digest = ReadonlyMap<string, string>
type KeySet = ReadonlySet<string>

interface Kernel {
  readonly shim: string
  readonly grub: string
  readonly kernel: string | undefined
  readonly vmlinuz: string | undefined
  readonly initrd: string
  readonly cmdline: RegExp
}

interface Compiled {
  readonly secure: boolean
  readonly kernels: ReadonlyArray<Kernel>
  readonly scrtmAndBios: ReadonlyArray<{ readonly scrtm: Digest; readonly firmware: ReadonlyArray<Digest> }>
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
const GLOBAL = new Set([GUID.globalVariable, "61dfe48b-ca93-d211-aa0d-00e098032b8c"])
const IMAGE_DB = new Set([GUID.imageSecurityDatabase, "cbb219d7-3a3d-9645-a3bc-dad00e67656f"])
const SHIM = new Set([GUID.shimLock, "50ab5d60-46e0-0043-abb6-3dd810dd8b23"])
const X509 = [GUID.certX509, "a159c0a5-e494-a74a-87b5-ab155c2bf072"]
const SHA256 = [GUID.certSha256, "2616c4c1-4c50-9240-aca9-41f936934328"]

const strip = (h: string) => h.slice(2)
const digestOf = (d: Readonly<Record<string, string>>): Digest => new Map(Object.entries(d).map(([a, v]) => [a, strip(v)]))
const keyId = (owner: string, dataHex: string) => `${owner}/${dataHex}`

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
      initrd: strip(k.initrd_plain_sha256),
      cmdline
    })
  }
  const keys = (list: ReadonlyArray<{ readonly SignatureOwner: string; readonly SignatureData: string }>): KeySet | undefined =>
    !secure && list.length === 0 ? undefined : new Set(list.map((s) => keyId(s.SignatureOwner, strip(s.SignatureData))))
  return Either.right({
    secure,
    kernels,
    scrtmAndBios: r.scrtm_and_bios.map((s) => ({ scrtm: digestOf(s.scrtm), firmware: s.platform_firmware.map(digestOf) })),
    pk: keys(r.pk),
    kek: keys(r.kek),
    db: keys(r.db),
    dbx: !secure && r.dbx.length === 0 ? undefined : indexKeys(r.dbx),
    vendorDb: r.vendor_db === undefined || r.vendor_db.length === 0 ? undefined : keys(r.vendor_db),
    mokdig: r.mokdig.map(digestOf),
    mokxdig: r.mokxdig.map(digestOf)
  })
}

/** True when one of the event's digests is approved by one of `good`. */
const hasDigest = (e: BootEvent, good: ReadonlyArray<Digest>): boolean => {
  for (const d of e.digests) {
    if (d.alg === undefined) continue
    let hex: string | undefined
    for (const g of good) {
      const want = g.get(d.alg)
      if (want === undefined) continue
      hex ??= toHex(d.digest)
      if (hex === want) return true
    }
  }
  return false
}
const sha256Is = (e: BootEvent, hex: string): boolean => hasDigest(e, [new Map([["sha256", hex]])])

/** Event data whose digest is H(data) in at least one bank (EV_SEPARATOR, EV_EFI_ACTION). */
const digestOfData = (e: BootEvent, data: Uint8Array): boolean => {
  for (const d of e.digests) if (d.alg !== undefined && createHash(d.alg).update(data).digest().equals(d.digest)) return true
  return false
}

const EFI_ACTIONS: Readonly<Record<number, ReadonlyArray<string>>> = {
  4: ["Calling EFI Application from Boot Option", "Returning from EFI Application from Boot Option"],
  5: ["Exit Boot Services Invocation", "Exit Boot Services Returned with Failure", "Exit Boot Services Returned with Success"],
  6: ["UEFI Debug Mode"]
}

interface Run {
  readonly once: Set<string>
  configFlags: number
  readonly sCrtms: Array<BootEvent>
  readonly firmware: Array<BootEvent>
  readonly bsas: Array<BootEvent>
  readonly ipl9s: Array<BootEvent>
  readonly vmlinuz: Array<BootEvent>
  readonly cmdlines: Array<BootEvent>
}

const once = (run: Run, key: string): string => {
  if (run.once.has(key)) return "test was already run once"
  run.once.add(key)
  return ""
}

const text = (e: BootEvent): string | undefined => (e.decoded.kind === "string" ? e.decoded.text : undefined)

const keySubset = (e: BootEvent, types: ReadonlyArray<string>, allowed: KeySet): string => {
  if (e.decoded.kind !== "variable" || e.decoded.value.kind !== "signatureLists") return "Event.VariableData is not a signature list"
  for (const [i, list] of e.decoded.value.lists.entries()) {
    if (!types.includes(list.SignatureType)) return `VariableData [${i}] SignatureType is not '${types[0]}'`
    for (const [j, k] of list.Keys.entries()) {
      if (!allowed.has(keyId(k.SignatureOwner, k.SignatureData))) {
        return `VariableData [${i}] Keys [${j}] (owner ${k.SignatureOwner}, ${k.SignatureData.slice(0, 32)}…) is not an allowed key`
      }
    }
  }
  return ""
}

const keySuperset = (e: BootEvent, required: NonNullable<Compiled["dbx"]>): string => {
  if (e.decoded.kind !== "variable" || e.decoded.value.kind !== "signatureLists") return "Event.VariableData is not a signature list"
  const lists = e.decoded.value.lists
  if (lists.length !== 1) return `VariableData is ${lists.length > 1 ? "longer" : "shorter"} (${lists.length}) than the applicable tests (1)`
  const list = lists[0]!
  if (!SHA256.includes(list.SignatureType)) return `VariableData [0] SignatureType is not '${GUID.certSha256}'`
  // Count distinct required entries present (dbx lists hold hundreds of hashes; no per-key string building).
  const seen = new Uint8Array(required.count)
  let found = 0
  for (const k of list.Keys) {
    const owners = required.byData.get(k.SignatureData)
    if (owners === undefined) continue
    for (const [owner, i] of owners) if (owner === k.SignatureOwner && seen[i] === 0) (seen[i] = 1), found++
  }
  return found === required.count ? "" : `VariableData [0] Keys lacks ${required.count - found} of the ${required.count} required dbx entries`
}

const driverConfig = (c: Compiled, run: Run, e: BootEvent): string => {
  if (e.decoded.kind !== "variable") return "has no Event field"
  const v = e.decoded
  if (GLOBAL.has(v.variableName)) {
    if (v.unicodeName === "SecureBoot") {
      if (v.value.kind !== "enabled") return "Event VariableData has no 'Enabled' field"
      return v.value.enabled === c.secure ? "" : `Event VariableData Enabled is not '${c.secure ? "Yes" : "No"}'`
    }
    if (v.unicodeName === "PK") return once(run, "pk") || (c.pk === undefined ? "" : keySubset(e, X509, c.pk))
    if (v.unicodeName === "KEK") return once(run, "kek") || (c.kek === undefined ? "" : keySubset(e, X509, c.kek))
  }
  if (IMAGE_DB.has(v.variableName)) {
    if (v.unicodeName === "db") return once(run, "db") || (c.db === undefined ? "" : keySubset(e, [X509[0]!, SHA256[0]!, X509[1]!, SHA256[1]!], c.db))
    if (v.unicodeName === "dbx") return once(run, "dbx") || (c.dbx === undefined ? "" : keySuperset(e, c.dbx))
  }
  return `Event has unexpected ('VariableName', 'UnicodeName') combination ('${v.variableName}', '${v.unicodeName}')`
}

const authority = (c: Compiled, run: Run, e: BootEvent): string => {
  if (e.decoded.kind !== "variable") return "has no Event field"
  const v = e.decoded
  if (IMAGE_DB.has(v.variableName)) {
    // The cert that verified shim is trusted: the shim digest itself is checked.
    if (v.unicodeName === "db") return once(run, "authority-db")
    if (v.unicodeName === "vendor_db") {
      const r = once(run, "authority-vendor_db")
      if (r || c.vendorDb === undefined) return r
      if (v.value.kind !== "signature") return "Event VariableData is not a signature"
      return c.vendorDb.has(keyId(v.value.entry.SignatureOwner, v.value.entry.SignatureData)) ? "" : "Event VariableData is not an allowed vendor_db key"
    }
  }
  if (SHIM.has(v.variableName)) {
    if (v.unicodeName === "SbatLevel") return once(run, "authority-sbat")
    if (v.unicodeName === "Shim") return once(run, "authority-shim")
    if (v.unicodeName === "MokListRT") return once(run, "authority-moklistrt")
    if (v.unicodeName === "MokListTrusted") {
      return once(run, "authority-moklisttrusted") || (v.value.kind === "enabled" ? "" : "Event VariableData has no 'Enabled' field")
    }
  }
  return `Event has unexpected ('VariableName', 'UnicodeName') combination ('${v.variableName}', '${v.unicodeName}')`
}

const BOOT_VAR = /^(?:BootOrder|Boot[0-9a-fA-F]+)$/

const dispatch = (c: Compiled, run: Run, e: BootEvent): string => {
  const t = e.type
  switch (e.pcr) {
    case 0:
      if (t === EV.NO_ACTION) return once(run, "no_action")
      if (t === EV.S_CRTM_VERSION) return void run.sCrtms.push(e), ""
      if (t === EV.EFI_PLATFORM_FIRMWARE_BLOB || t === EV.EFI_PLATFORM_FIRMWARE_BLOB2) return void run.firmware.push(e), ""
      break
    case 1:
      if (t === EV.CPU_MICROCODE) return once(run, "microcode")
      if (t === EV.EFI_HANDOFF_TABLES) return once(run, "handoff")
      if (t === EV.EFI_HANDOFF_TABLES2) return once(run, "handoff2")
      if (t === EV.PLATFORM_CONFIG_FLAGS) {
        // edk2 measures up to four of these; Keylime allows four.
        run.configFlags++
        return run.configFlags <= 4 ? "" : "[test was already run once, test was already run once, test was already run once, test was already run once]"
      }
      if (t === EV.EFI_VARIABLE_BOOT) {
        if (e.decoded.kind !== "variable") return "has no Event field"
        if (!GLOBAL.has(e.decoded.variableName)) return `Event.VariableName is ${e.decoded.variableName} rather than ${GUID.globalVariable}`
        return BOOT_VAR.test(e.decoded.unicodeName) ? "" : `Event.UnicodeName, ${e.decoded.unicodeName}, does not match BootOrder|Boot[0-9a-fA-F]+`
      }
      break
    case 2:
      if (t === EV.EFI_BOOT_SERVICES_DRIVER) return ""
      break
    case 4:
      if (t === EV.EFI_BOOT_SERVICES_APPLICATION) return void run.bsas.push(e), ""
      break
    case 5:
      if (t === EV.EFI_GPT_EVENT) return once(run, "gpt")
      break
    case 7:
      if (t === EV.EFI_VARIABLE_DRIVER_CONFIG) return driverConfig(c, run, e)
      if (t === EV.EFI_VARIABLE_AUTHORITY) return authority(c, run, e)
      break
    case 8:
      if (t === EV.IPL) {
        const s = text(e) ?? ""
        if (s.startsWith("grub_cmd: ")) return ""
        if (/^kernel_cmdline: .*$/.test(s)) return void run.cmdlines.push(e), ""
        return `Event String does not match grub_cmd: .* or kernel_cmdline: .*`
      }
      break
    case 9:
      if (t === EV.IPL) {
        const s = text(e) ?? ""
        if (/^.*\/loader\/entries.*$/.test(s) || /^.*\/grub.*$/.test(s)) return ""
        if (/^.*\/vmlinuz.*$/.test(s)) return void run.vmlinuz.push(e), ""
        if (/^.*\/initrd.*$/.test(s) || /^.*\/initramfs.*$/.test(s)) return void run.ipl9s.push(e), ""
        return `Event String '${s}' is not a grub file, loader entry, vmlinuz or initrd`
      }
      break
    case 14:
      if (t === EV.IPL) {
        const s = text(e)
        if (s === "MokList") return hasDigest(e, c.mokdig) ? "" : "has no digest approved by mokdig"
        if (s === "MokListX") return hasDigest(e, c.mokxdig) ? "" : "has no digest approved by mokxdig"
        if (s === "MokListTrusted") return once(run, "ipl-moklisttrusted")
        return `Event String '${s ?? ""}' is not MokList, MokListX or MokListTrusted`
      }
      break
  }
  if (t === EV.SEPARATOR && e.pcr <= 7) {
    const d = e.data
    const ok = d.length === 4 && ((d[0] === 0 && d[1] === 0 && d[2] === 0 && d[3] === 0) || (d[0] === 0xff && d[1] === 0xff && d[2] === 0xff && d[3] === 0xff))
    return ok && digestOfData(e, d) ? "" : "is not a valid EV_SEPARATOR (00000000 or FFFFFFFF, digest of the event data)"
  }
  if (t === EV.EFI_ACTION && (e.pcr === 1 || e.pcr === 4 || e.pcr === 5)) {
    const allowed = EFI_ACTIONS[e.pcr]
    if (allowed === undefined) return `No EV_EFI_ACTION event for ${e.pcr} is expected in the spec`
    const s = text(e) ?? ""
    return allowed.includes(s) && digestOfData(e, e.data) ? "" : `Event '${s}' is not one of ${allowed.map((a) => `'${a}'`).join(", ")} with its digest`
  }
  return `has unexpected ('PCRIndex', 'EventType') combination (${e.pcr}, '${e.typeName}')`
}

const where = (e: BootEvent) => `event ${e.index} (PCR ${e.pcr}, ${e.typeName})`

/** Keylime's TupleTest: exactly as many events as tests, each passing its own. */
const tuple = (field: string, events: ReadonlyArray<BootEvent>, tests: ReadonlyArray<[string, (e: BootEvent) => boolean]>): string => {
  if (events.length > tests.length) return `${field} is longer (${events.length}) than the applicable tests (${tests.length})`
  if (events.length < tests.length) return `${field} is shorter (${events.length}) than the applicable tests (${tests.length})`
  for (let i = 0; i < tests.length; i++) {
    const [what, ok] = tests[i]!
    if (!ok(events[i]!)) return `${field} [${i}] ${where(events[i]!)} does not match ${what}`
  }
  return ""
}

const or = (reasons: ReadonlyArray<string>): string => (reasons.some((r) => r === "") ? "" : `[${reasons.join(", ")}]`)

const checkKernel = (c: Compiled, run: Run, k: Kernel): string => {
  const shim: [string, (e: BootEvent) => boolean] = [`shim_authcode_sha256 ${k.shim}`, (e) => sha256Is(e, k.shim)]
  const grub: [string, (e: BootEvent) => boolean] = [`grub_authcode_sha256 ${k.grub}`, (e) => sha256Is(e, k.grub)]
  let bsas: string
  if (c.secure) {
    const kernel: [string, (e: BootEvent) => boolean] = [`kernel_authcode_sha256 ${k.kernel}`, (e) => sha256Is(e, k.kernel ?? "")]
    bsas = or([tuple("bsas", run.bsas, [shim, grub, kernel]), tuple("bsas", run.bsas, [shim, grub, kernel, kernel])])
  } else bsas = tuple("bsas", run.bsas, [shim, grub])
  return (
    bsas ||
    tuple("ipl9s", run.ipl9s, [[`initrd_plain_sha256 ${k.initrd}`, (e) => sha256Is(e, k.initrd)]]) ||
    tuple("vmlinuz", run.vmlinuz, [[`vmlinuz_plain_sha256 ${k.vmlinuz}`, (e) => c.secure || sha256Is(e, k.vmlinuz ?? "")]]) ||
    tuple("kernel_cmdlines", run.cmdlines, [[`kernel_cmdline ${k.cmdline.source}`, (e) => k.cmdline.test(text(e) ?? "")]])
  )
}

const checkFinal = (c: Compiled, run: Run): string => {
  const kernels = or(c.kernels.map((k) => checkKernel(c, run, k)))
  if (kernels) return c.kernels.length === 0 ? "does not pass empty disjunction (no kernels in the refstate)" : kernels
  if (c.scrtmAndBios.length === 0) return "does not pass empty disjunction (no scrtm_and_bios in the refstate)"
  return or(
    c.scrtmAndBios.map(
      (s) =>
        tuple("s_crtms", run.sCrtms, [["scrtm", (e) => hasDigest(e, [s.scrtm])]]) ||
        tuple("platform_firmware_blobs", run.firmware, s.firmware.map((f, i): [string, (e: BootEvent) => boolean] => [`platform_firmware[${i}]`, (e) => hasDigest(e, [f])]))
    )
  )
}

/** The verifier evaluates the same reference state every round: compile it once per object. */
const compiledCache = new WeakMap<object, Either.Either<Compiled, string>>()
const compileCached = (refstate: unknown): Either.Either<Compiled, string> => {
  if (typeof refstate !== "object" || refstate === null) return compile(refstate)
  let c = compiledCache.get(refstate)
  if (c === undefined) compiledCache.set(refstate, (c = compile(refstate)))
  return c
}

const evaluate = (refstate: unknown, log: EventLog): string => {
  const compiled = compileCached(refstate)
  if (Either.isLeft(compiled)) return `policy evaluation failed: ${compiled.left}`
  const c = compiled.right
  const run: Run = { once: new Set(), configFlags: 0, sCrtms: [], firmware: [], bsas: [], ipl9s: [], vmlinuz: [], cmdlines: [] }
  for (const e of log.events) {
    const reason = dispatch(c, run, e)
    if (reason) return `${where(e)} ${reason}`
  }
  return checkFinal(c, run)
}

export const examplePolicy: MbPolicy = {
  name: "example",
  relevantPcrs: new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]),
  evaluate
}
