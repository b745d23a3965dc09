/**
 * Measured-boot reference state for Keylime's `example` policy (keylime/mba/elchecking/example.py),
 * as `keylime-policy create measured-boot` writes it and `attest policy create measured-boot` does.
 * Hex values are "0x" + lowercase hex; a digest is { <alg>: hex }; a key is {SignatureOwner, SignatureData}.
 * Unknown keys are kept out of the decoded value, as Keylime ignores them.
 * attest's additions (optional, so Keylime's reference states read unchanged): `platform_events` in
 * an `scrtm_and_bios` entry, and a kernel without `initrd_plain_sha256` (docs/architecture.md,
 * "Measured boot departures").
 */
import { Schema } from "effect"

export const Hex0x = Schema.String.pipe(
  Schema.pattern(/^0x[0-9a-f]+$/, { message: () => "expected 0x followed by lowercase hex digits" })
)

/** { sha256: "0x…" } (any algorithm names; the policy compares those the log has). */
export const MbDigest = Schema.Record({ key: Schema.String, value: Hex0x })
export type MbDigest = typeof MbDigest.Type

export const MbSignature = Schema.Struct({
  SignatureOwner: Schema.String,
  SignatureData: Hex0x
})
export type MbSignature = typeof MbSignature.Type

/**
 * A firmware event the `example` policy has no rule for (EV_POST_CODE, EV_NONHOST_INFO, vendor
 * configuration variables, firmware applications…), pinned by PCR, type name and digest.
 */
export const MbPlatformEvent = Schema.Struct({
  pcr: Schema.Int.pipe(Schema.between(0, 7)),
  /** As attest and tpm2-tools name it: "EV_POST_CODE", or "0x00008401" for an unnamed type. */
  event_type: Schema.String,
  digest: MbDigest
})
export type MbPlatformEvent = typeof MbPlatformEvent.Type

export const ScrtmAndBios = Schema.Struct({
  scrtm: MbDigest,
  platform_firmware: Schema.Array(MbDigest),
  /** attest: exactly these firmware events, in this order; absent = none allowed (Keylime). */
  platform_events: Schema.optional(Schema.Array(MbPlatformEvent))
})

/**
 * One allowed kernel. With SecureBoot: kernel_authcode_sha256; without: vmlinuz_plain_sha256.
 * No initrd_plain_sha256 (attest's addition): the boot loads no initrd.
 */
export const MbKernel = Schema.Struct({
  shim_authcode_sha256: Hex0x,
  grub_authcode_sha256: Hex0x,
  kernel_authcode_sha256: Schema.optional(Hex0x),
  vmlinuz_plain_sha256: Schema.optional(Hex0x),
  initrd_plain_sha256: Schema.optional(Hex0x),
  /** A regular expression matched against the whole command line (after "kernel_cmdline: "). */
  kernel_cmdline: Schema.String
})
export type MbKernel = typeof MbKernel.Type

export const MbRefState = Schema.Struct({
  has_secureboot: Schema.optional(Schema.Boolean),
  scrtm_and_bios: Schema.Array(ScrtmAndBios),
  pk: Schema.Array(MbSignature),
  kek: Schema.Array(MbSignature),
  db: Schema.Array(MbSignature),
  dbx: Schema.Array(MbSignature),
  vendor_db: Schema.optional(Schema.Array(MbSignature)),
  mokdig: Schema.Array(MbDigest),
  mokxdig: Schema.Array(MbDigest),
  kernels: Schema.Array(MbKernel)
})
export type MbRefState = typeof MbRefState.Type

/** Names of the built-in measured-boot policies (others may be registered). */
export const MbPolicyName = Schema.String.pipe(Schema.brand("MbPolicyName"))
