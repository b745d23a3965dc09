/**
 * Keylime's `example` measured-boot policy (keylime/mba/elchecking/example.py) over its reference
 * state (schemas/MbPolicy.ts, compiled by exampleRefState.ts), as plain code: every event is
 * dispatched on (PCRIndex, EventType); events that only need to be well-formed are accepted (some at
 * most once); PK/KEK/db must hold only allowed keys and dbx at least the required ones; S-CRTM,
 * firmware blobs, boot applications, the initrd, vmlinuz and the kernel command line are collected
 * and checked at the end against one of the allowed `scrtm_and_bios` entries and one of the allowed
 * `kernels`. Reasons name the event (index, PCR, type) so an operator can act on them.
 *
 * Where attest departs from Keylime (so that a reference state made from a log accepts that log, and
 * a logged variable must be the measured one) is listed in docs/architecture.md, "Measured boot
 * departures": EV_NO_ACTION events are never judged (they are not measured); firmware events without
 * a rule are pinned as `platform_events`; dbx may span several signature lists; SecureBoot, PK, KEK,
 * db, dbx and vendor_db events must carry the digest of their own data.
 */
import { Either } from "effect"
import { GUID } from "./eventData.js"
import type { BootEvent, EventLog } from "./eventLog.js"
import { EV } from "./eventTypes.js"
import {
  classifyingRefState,
  type Compiled,
  compileRefState,
  type Digest,
  GLOBAL,
  IMAGE_DB,
  type Kernel,
  keyId,
  type KeySet,
  type ScrtmAndBiosRule,
  SHA256,
  SHIM,
  X509
} from "./exampleRefState.js"
import { digestIs } from "./hash.js"
import type { MbPolicy } from "./policy.js"
import { toHex } from "./text.js"

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

/**
 * A variable event whose content the policy judges must show what was measured: in every bank, the
 * digest is H(UEFI_VARIABLE_DATA) (PFP spec) or H(VariableData) (what some firmware measures).
 * Otherwise a log could show allowed keys while PCR 7 holds others.
 */
const measuredAsLogged = (e: BootEvent): string => {
  const variableData = e.decoded.kind === "variable" ? e.decoded.variableData : e.data
  for (const d of e.digests) {
    if (d.alg === undefined) continue
    if (digestIs(d.alg, e.data, d.digest)) continue
    if (variableData !== e.data && digestIs(d.alg, variableData, d.digest)) continue
    return `digest in the ${d.alg} bank is not the hash of the logged variable: the log does not show what was measured`
  }
  return ""
}

/** Event data whose digest is H(data) in at least one bank (EV_SEPARATOR, EV_EFI_ACTION). */
const digestOfData = (e: BootEvent, data: Uint8Array): boolean => {
  for (const d of e.digests) if (d.alg !== undefined && digestIs(d.alg, data, d.digest)) return true
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
  /** Firmware events without a rule, when the refstate pins them (`platform_events`). */
  readonly platform: Array<BootEvent>
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

/** dbx holds at least the required entries, across all its signature lists (hashes and certificates). */
const keySuperset = (e: BootEvent, required: NonNullable<Compiled["dbx"]>): string => {
  if (e.decoded.kind !== "variable" || e.decoded.value.kind !== "signatureLists") return "Event.VariableData is not a signature list"
  // Count distinct required entries present (dbx lists hold hundreds of hashes; no per-key string building).
  const seen = new Uint8Array(required.count)
  let found = 0
  for (const [i, list] of e.decoded.value.lists.entries()) {
    if (!SHA256.includes(list.SignatureType) && !X509.includes(list.SignatureType)) {
      return `VariableData [${i}] SignatureType is not '${GUID.certSha256}' or '${GUID.certX509}'`
    }
    for (const k of list.Keys) {
      const owners = required.byData.get(k.SignatureData)
      if (owners === undefined) continue
      for (const [owner, j] of owners) if (owner === k.SignatureOwner && seen[j] === 0) (seen[j] = 1), found++
    }
  }
  return found === required.count ? "" : `VariableData lacks ${required.count - found} of the ${required.count} required dbx entries`
}

const DB_TYPES = [X509[0]!, SHA256[0]!, X509[1]!, SHA256[1]!]

/**
 * A firmware event (PCR 0–7) no rule covers: pinned by the refstate's `platform_events` when it has
 * them (checked at the end), otherwise refused with Keylime's reason.
 */
const platform = (c: Compiled, run: Run, e: BootEvent, keylimeReason: string): string => {
  if (!c.platformEvents || e.pcr > 7) return keylimeReason
  run.platform.push(e)
  return ""
}

const unexpected = (e: BootEvent) => `has unexpected ('PCRIndex', 'EventType') combination (${e.pcr}, '${e.typeName}')`

/** Firmware menus and other firmware volumes run as boot applications too; they are not the OS's boot chain. */
const FIRMWARE_APP = /^FvVol\(\w{8}-\w{4}-\w{4}-\w{4}-\w{12}\)\/FvFile\(\w{8}-\w{4}-\w{4}-\w{4}-\w{12}\)/
export const isFirmwareApplication = (e: BootEvent): boolean => e.decoded.kind === "imageLoad" && FIRMWARE_APP.test(e.decoded.devicePath.text)

const driverConfig = (c: Compiled, run: Run, e: BootEvent): string => {
  if (e.decoded.kind !== "variable") return "has no Event field"
  const v = e.decoded
  if (GLOBAL.has(v.variableName)) {
    if (v.unicodeName === "SecureBoot") {
      if (v.value.kind !== "enabled") return "Event VariableData has no 'Enabled' field"
      if (v.value.enabled !== c.secure) return `Event VariableData Enabled is not '${c.secure ? "Yes" : "No"}'`
      return measuredAsLogged(e)
    }
    if (v.unicodeName === "PK") return once(run, "pk") || measuredAsLogged(e) || (c.pk === undefined ? "" : keySubset(e, X509, c.pk))
    if (v.unicodeName === "KEK") return once(run, "kek") || measuredAsLogged(e) || (c.kek === undefined ? "" : keySubset(e, X509, c.kek))
  }
  if (IMAGE_DB.has(v.variableName)) {
    if (v.unicodeName === "db") return once(run, "db") || measuredAsLogged(e) || (c.db === undefined ? "" : keySubset(e, DB_TYPES, c.db))
    if (v.unicodeName === "dbx") return once(run, "dbx") || measuredAsLogged(e) || (c.dbx === undefined ? "" : keySuperset(e, c.dbx))
  }
  return platform(c, run, e, `Event has unexpected ('VariableName', 'UnicodeName') combination ('${v.variableName}', '${v.unicodeName}')`)
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
      const measured = measuredAsLogged(e)
      if (measured) return measured
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
  return platform(c, run, e, `Event has unexpected ('VariableName', 'UnicodeName') combination ('${v.variableName}', '${v.unicodeName}')`)
}

const BOOT_VAR = /^(?:BootOrder|Boot[0-9a-fA-F]+)$/

const dispatch = (c: Compiled, run: Run, e: BootEvent): string => {
  const t = e.type
  // Not extended into any PCR (Spec ID header, StartupLocality, …): nothing in it can be trusted or judged.
  if (t === EV.NO_ACTION) return ""
  switch (e.pcr) {
    case 0:
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
      if (t === EV.EFI_BOOT_SERVICES_APPLICATION) {
        if (c.platformEvents && isFirmwareApplication(e)) return platform(c, run, e, "")
        return void run.bsas.push(e), ""
      }
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
    if (allowed === undefined) return platform(c, run, e, `No EV_EFI_ACTION event for ${e.pcr} is expected in the spec`)
    const s = text(e) ?? ""
    return allowed.includes(s) && digestOfData(e, e.data) ? "" : `Event '${s}' is not one of ${allowed.map((a) => `'${a}'`).join(", ")} with its digest`
  }
  return platform(c, run, e, unexpected(e))
}

const where = (e: BootEvent) => `event ${e.index} (PCR ${e.pcr}, ${e.typeName})`

type Test = readonly [string, (e: BootEvent) => boolean]

/** Keylime's TupleTest: exactly as many events as tests, each passing its own. */
const tuple = (field: string, events: ReadonlyArray<BootEvent>, tests: ReadonlyArray<Test>): string => {
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
  const shim: Test = [`shim_authcode_sha256 ${k.shim}`, (e) => sha256Is(e, k.shim)]
  const grub: Test = [`grub_authcode_sha256 ${k.grub}`, (e) => sha256Is(e, k.grub)]
  let bsas: string
  if (c.secure) {
    const kernel: Test = [`kernel_authcode_sha256 ${k.kernel}`, (e) => sha256Is(e, k.kernel ?? "")]
    bsas = or([tuple("bsas", run.bsas, [shim, grub, kernel]), tuple("bsas", run.bsas, [shim, grub, kernel, kernel])])
  } else bsas = tuple("bsas", run.bsas, [shim, grub])
  const initrd: ReadonlyArray<Test> = k.initrd === undefined ? [] : [[`initrd_plain_sha256 ${k.initrd}`, (e) => sha256Is(e, k.initrd ?? "")]]
  return (
    bsas ||
    tuple("ipl9s", run.ipl9s, initrd) ||
    tuple("vmlinuz", run.vmlinuz, [[`vmlinuz_plain_sha256 ${k.vmlinuz}`, (e) => c.secure || sha256Is(e, k.vmlinuz ?? "")]]) ||
    tuple("kernel_cmdlines", run.cmdlines, [[`kernel_cmdline ${k.cmdline.source}`, (e) => k.cmdline.test(text(e) ?? "")]])
  )
}

/** The firmware events without a rule must be exactly the entry's `platform_events`, in order. */
const checkPlatform = (s: ScrtmAndBiosRule, run: Run): string => {
  const rules = s.platform ?? []
  if (rules.length === 0 && run.platform.length > 0) {
    const e = run.platform[0]!
    return `${where(e)} is not in the refstate's platform_events (${unexpected(e)})`
  }
  return tuple(
    "platform_events",
    run.platform,
    rules.map((p, i): Test => [`platform_events[${i}] (PCR ${p.pcr}, ${p.type})`, (e) => e.pcr === p.pcr && e.typeName === p.type && hasDigest(e, [p.digest])])
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
        tuple("platform_firmware_blobs", run.firmware, s.firmware.map((f, i): Test => [`platform_firmware[${i}]`, (e) => hasDigest(e, [f])])) ||
        checkPlatform(s, run)
    )
  )
}

const newRun = (): Run => ({ once: new Set(), configFlags: 0, sCrtms: [], firmware: [], bsas: [], ipl9s: [], vmlinuz: [], cmdlines: [], platform: [] })

const evaluate = (refstate: unknown, log: EventLog): string => {
  const compiled = compileRefState(refstate)
  if (Either.isLeft(compiled)) return `policy evaluation failed: ${compiled.left}`
  const c = compiled.right
  const run = newRun()
  for (const e of log.events) {
    const reason = dispatch(c, run, e)
    if (reason) return `${where(e)} ${reason}`
  }
  return checkFinal(c, run)
}

/**
 * The events of `log` the policy has no rule for and pins as `platform_events` (what the reference
 * state generator records), in log order: the same dispatch decides, so generator and policy agree.
 */
export const platformEventsOf = (log: EventLog): ReadonlyArray<BootEvent> => {
  const run = newRun()
  for (const e of log.events) dispatch(classifyingRefState, run, e)
  return run.platform
}

export const examplePolicy: MbPolicy = {
  name: "example",
  relevantPcrs: new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]),
  evaluate
}
