/**
 * Builds the `example` policy's reference state from a log, as `keylime-policy create measured-boot`
 * does: S-CRTM and firmware blob digests, PK/KEK/db/dbx keys, MokList/MokListX digests, and one
 * kernel entry (shim, grub and kernel authenticode digests from the boot applications, initrd,
 * vmlinuz without SecureBoot, and the kernel command line as an escaped regular expression).
 * Beyond Keylime, so that the state accepts the log it was made from: the firmware events the policy
 * has no rule for are pinned as `platform_events`, and a boot without an initrd is recorded as such.
 */
import { Either } from "effect"
import type { MbDigest, MbKernel, MbPlatformEvent, MbRefState, MbSignature } from "../../schemas/MbPolicy.js"
import type { SignatureList } from "./eventData.js"
import { RefStateCreateError } from "./errors.js"
import type { BootEvent, EventLog } from "./eventLog.js"
import { EV } from "./eventTypes.js"
import { isFirmwareApplication, platformEventsOf } from "./examplePolicy.js"
import { toHex } from "./text.js"

export interface RefStateOptions {
  /** Keylime's `--without-secureboot` / `-i`: required when the log has SecureBoot off. */
  readonly withoutSecureBoot?: boolean
}

export interface CreatedRefState {
  readonly refstate: MbRefState
  /** Things an operator should know (Keylime logs them). */
  readonly warnings: ReadonlyArray<string>
}

const sha256 = (e: BootEvent): MbDigest => {
  const d = e.digests.find((x) => x.alg === "sha256")
  return d === undefined ? {} : { sha256: `0x${toHex(d.digest)}` }
}

const str = (e: BootEvent): string => (e.decoded.kind === "string" ? e.decoded.text : "")

/** Escapes regex metacharacters the same way for Python `re` and JavaScript (no u flag). */
export const escapeRegExp = (s: string): string => s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&")

const fail = (message: string) => Either.left(new RefStateCreateError({ message }))

export const createRefState = (log: EventLog, options: RefStateOptions = {}): Either.Either<CreatedRefState, RefStateCreateError> => {
  const events = log.events
  const warnings: Array<string> = []
  if (events.length <= 1) return fail("no events found in the boot event log")
  // The reference state's digests are sha256 (Keylime's field names say so).
  if (!log.algorithms.some((a) => a.alg === "sha256")) {
    return fail(`the event log has no sha256 bank (${log.format === "sha1" ? "a legacy SHA-1 log" : "banks " + log.algorithms.map((a) => a.alg ?? a.algId).join(", ")}); the example policy's reference state needs sha256 digests`)
  }

  const sb = events.find((e) => e.type === EV.EFI_VARIABLE_DRIVER_CONFIG && e.decoded.kind === "variable" && e.decoded.unicodeName === "SecureBoot")
  if (sb === undefined || sb.decoded.kind !== "variable") return fail("SecureBoot state could not be determined")
  const secure = sb.decoded.value.kind === "enabled" && sb.decoded.value.enabled
  if (!secure && !options.withoutSecureBoot) return fail("the event log has SecureBoot disabled, but --without-secureboot was not set")
  if (secure && options.withoutSecureBoot) {
    warnings.push("--without-secureboot was set, but the event log has SecureBoot enabled; ignoring the flag")
  }

  const scrtm = events.find((e) => e.type === EV.S_CRTM_VERSION)
  if (scrtm === undefined) return fail("the event log has no EV_S_CRTM_VERSION event")
  const firmware = events.filter((e) => e.type === EV.EFI_PLATFORM_FIRMWARE_BLOB || e.type === EV.EFI_PLATFORM_FIRMWARE_BLOB2).map(sha256)

  const keys: Record<"pk" | "kek" | "db" | "dbx", Array<MbSignature>> = { pk: [], kek: [], db: [], dbx: [] }
  for (const e of events) {
    if (e.type !== EV.EFI_VARIABLE_DRIVER_CONFIG || e.decoded.kind !== "variable") continue
    const name = e.decoded.unicodeName.toLowerCase()
    if (name !== "pk" && name !== "kek" && name !== "db" && name !== "dbx") continue
    const lists: ReadonlyArray<SignatureList> = e.decoded.value.kind === "signatureLists" ? e.decoded.value.lists : []
    keys[name] = lists.flatMap((l) => l.Keys.map((k) => ({ SignatureOwner: k.SignatureOwner, SignatureData: `0x${k.SignatureData}` })))
  }
  // vendor_db keys shim was verified with (EV_EFI_VARIABLE_AUTHORITY): the example policy checks them when present.
  const vendorDb: Array<MbSignature> = []
  for (const e of events) {
    if (e.type === EV.EFI_VARIABLE_AUTHORITY && e.decoded.kind === "variable" && e.decoded.unicodeName === "vendor_db" && e.decoded.value.kind === "signature") {
      vendorDb.push({ SignatureOwner: e.decoded.value.entry.SignatureOwner, SignatureData: `0x${e.decoded.value.entry.SignatureData}` })
    }
  }

  const mokdig: Array<MbDigest> = []
  const mokxdig: Array<MbDigest> = []
  for (const e of events) {
    if (e.type !== EV.IPL) continue
    if (str(e) === "MokList") mokdig.push(sha256(e))
    else if (str(e) === "MokListX") mokxdig.push(sha256(e))
  }

  // Firmware menus and other firmware volumes run as boot applications too: pinned as platform events.
  const apps = events.filter((e) => e.type === EV.EFI_BOOT_SERVICES_APPLICATION && !isFirmwareApplication(e))
  if (secure && apps.length !== 3 && apps.length !== 4) return fail(`expected 3 UEFI applications to be booted (shim, grub, kernel), found ${apps.length}`)
  if (!secure && apps.length !== 2) return fail(`expected 2 UEFI applications to be booted (shim, grub), found ${apps.length}`)
  const authcode = (e: BootEvent) => sha256(e)["sha256"] ?? "0x"

  const ipl = (pcr: number, has: (s: string) => boolean) => events.find((e) => e.type === EV.IPL && e.pcr === pcr && has(str(e)))
  const initrd = ipl(9, (s) => s.includes("initrd") || s.includes("initramfs"))
  if (initrd === undefined) warnings.push("the event log has no PCR 9 EV_IPL event for an initrd/initramfs: the reference state allows none")
  const cmdline = ipl(8, (s) => s.includes("kernel_cmdline"))
  if (cmdline === undefined) return fail("the event log has no PCR 8 EV_IPL kernel_cmdline event")
  let vmlinuz: string | undefined
  if (!secure) {
    warnings.push("adding the plain sha256 digest of vmlinuz measured by GRUB, because SecureBoot is disabled")
    const v = ipl(9, (s) => s.includes("vmlinuz"))
    if (v === undefined) return fail("the event log has no PCR 9 EV_IPL event for vmlinuz")
    vmlinuz = authcode(v)
  }
  const kernel: MbKernel = {
    shim_authcode_sha256: authcode(apps[0]!),
    grub_authcode_sha256: authcode(apps[1]!),
    ...(secure ? { kernel_authcode_sha256: authcode(apps[2]!) } : {}),
    ...(initrd !== undefined ? { initrd_plain_sha256: authcode(initrd) } : {}),
    ...(vmlinuz !== undefined ? { vmlinuz_plain_sha256: vmlinuz } : {}),
    kernel_cmdline: escapeRegExp(str(cmdline).slice("kernel_cmdline: ".length))
  }

  const platformEvents: Array<MbPlatformEvent> = platformEventsOf(log).map((e) => ({ pcr: e.pcr, event_type: e.typeName, digest: sha256(e) }))
  if (platformEvents.length > 0) {
    warnings.push(`pinning ${platformEvents.length} firmware event(s) the example policy has no rule for (platform_events): ${[...new Set(platformEvents.map((p) => p.event_type))].join(", ")}`)
  }

  const refstate: MbRefState = {
    has_secureboot: secure,
    scrtm_and_bios: [{ scrtm: sha256(scrtm), platform_firmware: firmware, ...(platformEvents.length > 0 ? { platform_events: platformEvents } : {}) }],
    ...keys,
    ...(vendorDb.length > 0 ? { vendor_db: vendorDb } : {}),
    mokdig,
    mokxdig,
    kernels: [kernel]
  }
  return Either.right({ refstate, warnings })
}
