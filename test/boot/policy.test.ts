import { expect, it, layer } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { MbRefState } from "../../schemas/MbPolicy.js"
import { createRefState, escapeRegExp } from "../../src/boot/createRefState.js"
import { evaluateMeasuredBoot, evaluateMeasuredBootNamed, type MbInput } from "../../src/boot/evaluate.js"
import { parseEventLogBase64 } from "../../src/boot/eventLog.js"
import { examplePolicy } from "../../src/boot/examplePolicy.js"
import { acceptAllPolicy, type MbPolicy, MbPolicyRegistry, rejectAllPolicy } from "../../src/boot/policy.js"
import { replayPcrs } from "../../src/boot/replay.js"
import type { PcrValues } from "../../src/tpm/Tpm.js"
import { readVectorText } from "../support/vectors.js"
import { gceLog, keylimeLog, mbLogB64, parsed, rustUefiLog, secureBootLog, withBootAppChanged } from "./support.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const refstateOf = (bytes: Uint8Array, withoutSecureBoot = false) =>
  Either.getOrThrowWith(createRefState(parsed(bytes), { withoutSecureBoot }), (e) => new Error(e.message)).refstate

/** The quote a machine that booted `bytes` would produce: its own replay. */
const quoteOf = (bytes: Uint8Array): PcrValues => replayPcrs(parsed(bytes))

const types = (input: MbInput, policy: MbPolicy = examplePolicy) => evaluateMeasuredBoot(input, policy).failures.map((f) => f.type)

eachCryptoPort("example reference state", () => {
  it("decodes Keylime's example_reference_state.json with the MbRefState schema", () => {
    const json: unknown = JSON.parse(readVectorText("keylime", "keylime", "mba", "elchecking", "example_reference_state.json"))
    const r = Schema.decodeUnknownEither(MbRefState)(json)
    expect(Either.isRight(r)).toBe(true)
    if (Either.isRight(r)) {
      expect(r.right.kernels[0]!.kernel_authcode_sha256).toMatch(/^0x[0-9a-f]{64}$/)
      expect(r.right.pk[0]!.SignatureOwner).toBe("61dfe48b-ca93-d211-aa0d-00e098032b8c")
    }
  })

  it("evaluates Keylime's example_reference_state.json event by event, with Keylime's reasons", () => {
    const json: unknown = JSON.parse(readVectorText("keylime", "keylime", "mba", "elchecking", "example_reference_state.json"))
    const reason = (log: Uint8Array) => examplePolicy.evaluate(json, parsed(log))
    expect(reason(secureBootLog())).toMatch(/^event 5 \(PCR 7, EV_EFI_VARIABLE_DRIVER_CONFIG\) VariableData \[0\] Keys \[0\] \(owner a0baa8a3-041d-48a8-bc87-c36d121b5e3d, 308203a0.*\) is not an allowed key$/)
    // No platform_events in a Keylime reference state: firmware events without a rule are refused as Keylime does.
    expect(reason(keylimeLog())).toBe("event 2 (PCR 0, EV_S_CRTM_CONTENTS) has unexpected ('PCRIndex', 'EventType') combination (0, 'EV_S_CRTM_CONTENTS')")
  })

  it("rejects a reference state with upper-case hex or a missing kernels list", () => {
    const json = JSON.parse(readVectorText("keylime", "keylime", "mba", "elchecking", "example_reference_state.json")) as Record<string, unknown>
    expect(Either.isLeft(Schema.decodeUnknownEither(MbRefState)({ ...json, kernels: undefined }))).toBe(true)
    expect(Either.isLeft(Schema.decodeUnknownEither(MbRefState)({ ...json, mokdig: [{ sha256: "0xABCD" }] }))).toBe(true)
  })
})

eachCryptoPort("reference-state generator", () => {
  it("creates a SecureBoot reference state with Keylime's keys from the secureboot log", () => {
    const r = refstateOf(secureBootLog())
    expect(r.has_secureboot).toBe(true)
    expect(r.kernels).toHaveLength(1)
    expect(r.kernels[0]!.kernel_authcode_sha256).toMatch(/^0x[0-9a-f]{64}$/)
    expect(r.kernels[0]!.vmlinuz_plain_sha256).toBeUndefined()
    expect(r.pk.length).toBeGreaterThan(0)
    expect(r.dbx.length).toBeGreaterThan(0)
    expect(r.mokdig).toHaveLength(1)
    expect(r.scrtm_and_bios[0]!.platform_firmware).toHaveLength(2)
    expect(Either.isRight(Schema.decodeUnknownEither(MbRefState)(JSON.parse(JSON.stringify(r))))).toBe(true)
  })

  it("refuses a log with SecureBoot off unless --without-secureboot, then adds vmlinuz_plain_sha256", () => {
    const log = parsed(keylimeLog())
    const refused = createRefState(log)
    expect(Either.isLeft(refused) && refused.left.message).toMatch(/SecureBoot disabled/)
    const r = refstateOf(keylimeLog(), true)
    expect(r.has_secureboot).toBe(false)
    expect(r.kernels[0]!.vmlinuz_plain_sha256).toMatch(/^0x[0-9a-f]{64}$/)
    expect(r.kernels[0]!.kernel_authcode_sha256).toBeUndefined()
  })

  it("records the GCE boot as it happened: no initrd, EV_NONHOST_INFO as a platform event", () => {
    const created = Either.getOrThrow(createRefState(parsed(gceLog()), { withoutSecureBoot: true }))
    const r = created.refstate
    expect(r.has_secureboot).toBe(false)
    expect(r.kernels[0]!.initrd_plain_sha256).toBeUndefined()
    expect(r.kernels[0]!.vmlinuz_plain_sha256).toMatch(/^0x[0-9a-f]{64}$/)
    expect(r.scrtm_and_bios[0]!.platform_events?.map((p) => [p.pcr, p.event_type])).toEqual([[0, "EV_NONHOST_INFO"]])
    expect(created.warnings.join("\n")).toMatch(/no PCR 9 EV_IPL event for an initrd/)
  })

  it("keeps the Keylime shape (no platform_events) for a log the example policy fully covers", () => {
    expect(refstateOf(secureBootLog()).scrtm_and_bios[0]!.platform_events).toBeUndefined()
  })

  it("fails with a typed error on a log without a kernel command line", () => {
    const log = parsed(secureBootLog())
    const r = createRefState({ ...log, events: log.events.filter((e) => !(e.decoded.kind === "string" && e.decoded.text.startsWith("kernel_cmdline"))) })
    expect(Either.isLeft(r) && r.left._tag).toBe("RefStateCreateError")
    expect(Either.isLeft(r) && r.left.message).toMatch(/kernel_cmdline/)
  })

  it("escapes the kernel command line so it matches itself, in Python and JavaScript syntax", () => {
    const cmd = "root=/dev/mapper/a--b ro crashkernel=1G-4G:192M,4G-:512M (x)[y]{2}+? $HOME ^a|b \\n"
    expect(new RegExp(`^(?:${escapeRegExp(cmd)})$`).test(cmd)).toBe(true)
    expect(new RegExp(`^(?:${escapeRegExp(cmd)})$`).test(cmd + " init=/bin/sh")).toBe(false)
  })
})

eachCryptoPort("measured-boot evaluation", () => {
  it("passes the secureboot log against the reference state created from it", () => {
    const log = secureBootLog()
    expect(types({ log, quotedPcrs: quoteOf(log), refstate: refstateOf(log) })).toEqual([])
  })

  it("passes mb_log.b64, given as the agent's base64, against its own reference state", () => {
    const b64 = mbLogB64()
    const log = Either.getOrThrow(parseEventLogBase64(b64))
    const refstate = Either.getOrThrow(createRefState(log)).refstate
    const result = evaluateMeasuredBoot({ log: b64, quotedPcrs: replayPcrs(log), refstate }, examplePolicy)
    expect(result.failures).toEqual([])
    expect(result.bootAggregates.sha256).toHaveLength(2)
  })

  it("fails a log with one boot application changed (log and PCR 4 consistent): measured_boot.policy_example naming the event", () => {
    const original = secureBootLog()
    const changed = withBootAppChanged(original, 1) // grub
    const result = evaluateMeasuredBoot({ log: changed, quotedPcrs: quoteOf(changed), refstate: refstateOf(original) }, examplePolicy)
    expect(result.failures.map((f) => f.type)).toEqual(["measured_boot.policy_example"])
    const reason = String(result.failures[0]!.context["reason"])
    expect(result.failures[0]!.context.message).toBe("Boot attestation failed")
    expect(reason).toMatch(/bsas \[1\] event 35 \(PCR 4, EV_EFI_BOOT_SERVICES_APPLICATION\) does not match grub_authcode_sha256/)
  })

  it("reports measured_boot.invalid_pcr_4 when the quote's PCR 4 is not the log's", () => {
    const original = secureBootLog()
    const changed = withBootAppChanged(original, 2)
    // The machine booted `changed`, the agent sent the original log.
    const failures = evaluateMeasuredBoot({ log: original, quotedPcrs: quoteOf(changed), refstate: refstateOf(original) }, examplePolicy).failures
    expect(failures.map((f) => f.type)).toEqual(["measured_boot.invalid_pcr_4"])
    expect(failures[0]!.context).toMatchObject({ message: "SHA256 boot event log PCR value does not match", context: "SHA256 boot event log PCR value does not match", pcr: 4 })
  })

  it("reports measured_boot.missing_pcrs when the quote lacks PCRs the example policy needs", () => {
    const log = secureBootLog()
    const partial = quoteOf(log).map((b) => ({ hash: b.hash, values: new Map([...b.values].filter(([p]) => p !== 14 && p !== 9)) }))
    const failures = evaluateMeasuredBoot({ log, quotedPcrs: partial, refstate: refstateOf(log) }, examplePolicy).failures
    expect(failures.map((f) => f.type)).toEqual(["measured_boot.missing_pcrs"])
    expect(failures[0]!.context["data"]).toEqual([9, 14])
  })

  it("passes the StartupLocality log against its own refstate: EV_NO_ACTION events are not measured, so not judged (Keylime refuses the second)", () => {
    const log = keylimeLog()
    expect(parsed(log).events[1]!.decoded.kind).toBe("startupLocality")
    expect(evaluateMeasuredBoot({ log, quotedPcrs: quoteOf(log), refstate: refstateOf(log, true) }, examplePolicy).failures).toEqual([])
  })

  it("passes a dbx of several signature lists (hashes and certificates) that holds every required entry, and fails one that lacks an entry", () => {
    const log = rustUefiLog()
    const dbx = parsed(log).events.find((e) => e.decoded.kind === "variable" && e.decoded.unicodeName === "dbx")!
    expect(dbx.decoded.kind === "variable" && dbx.decoded.value.kind === "signatureLists" && dbx.decoded.value.lists.length).toBe(5)
    const refstate = refstateOf(log, true)
    expect(types({ log, quotedPcrs: quoteOf(log), refstate })).toEqual([])
    const more = { ...refstate, dbx: [...refstate.dbx, { SignatureOwner: refstate.dbx[0]!.SignatureOwner, SignatureData: "0x00" }] }
    const failures = evaluateMeasuredBoot({ log, quotedPcrs: quoteOf(log), refstate: more }, examplePolicy).failures
    expect(failures[0]!.context["reason"]).toBe("event 9 (PCR 7, EV_EFI_VARIABLE_DRIVER_CONFIG) VariableData lacks 1 of the 483 required dbx entries")
  })

  it("refuses a platform event the reference state does not pin, naming the event, and one whose digest changed", () => {
    const log = keylimeLog()
    const refstate = refstateOf(log, true)
    const pinned = refstate.scrtm_and_bios[0]!.platform_events!
    const fewer = { ...refstate, scrtm_and_bios: [{ ...refstate.scrtm_and_bios[0]!, platform_events: pinned.slice(0, -1) }] }
    const reason = (r: unknown) => evaluateMeasuredBoot({ log, quotedPcrs: quoteOf(log), refstate: r }, examplePolicy).failures[0]?.context["reason"]
    expect(reason(fewer)).toBe("[platform_events is longer (9) than the applicable tests (8)]")
    const changed = { ...refstate, scrtm_and_bios: [{ ...refstate.scrtm_and_bios[0]!, platform_events: pinned.map((p, i) => (i === 3 ? { ...p, digest: { sha256: "0x00" } } : p)) }] }
    expect(reason(changed)).toBe("[platform_events [3] event 21 (PCR 0, EV_NONHOST_INFO) does not match platform_events[3] (PCR 0, EV_NONHOST_INFO)]")
    const none = { ...refstate, scrtm_and_bios: [{ ...refstate.scrtm_and_bios[0]!, platform_events: [] }] }
    expect(String(reason(none))).toMatch(/event 2 \(PCR 0, EV_S_CRTM_CONTENTS\) is not in the refstate's platform_events/)
  })

  it("fails the GCE log under the example policy on its EV_NONHOST_INFO event", () => {
    const log = gceLog()
    const refstate = refstateOf(secureBootLog())
    const failures = evaluateMeasuredBoot({ log, quotedPcrs: quoteOf(log), refstate }, examplePolicy).failures
    expect(failures[0]!.context["reason"]).toMatch(/event 2 \(PCR 0, EV_NONHOST_INFO\) has unexpected \('PCRIndex', 'EventType'\) combination \(0, 'EV_NONHOST_INFO'\)/)
  })

  it("fails a reference state without SecureBoot against a log with SecureBoot on, at the SecureBoot variable", () => {
    const log = secureBootLog()
    const sb = refstateOf(log)
    const refstate = { ...sb, has_secureboot: false, kernels: sb.kernels.map((k) => ({ ...k, vmlinuz_plain_sha256: "0x00" })) }
    const failures = evaluateMeasuredBoot({ log, quotedPcrs: quoteOf(log), refstate }, examplePolicy).failures
    expect(failures[0]!.context["reason"]).toBe("event 4 (PCR 7, EV_EFI_VARIABLE_DRIVER_CONFIG) Event VariableData Enabled is not 'No'")
  })

  it("reports an invalid reference state as a policy failure, not an exception", () => {
    const log = secureBootLog()
    const failures = evaluateMeasuredBoot({ log, quotedPcrs: quoteOf(log), refstate: { kernels: "nope" } }, examplePolicy).failures
    expect(failures.map((f) => f.type)).toEqual(["measured_boot.policy_example"])
    expect(String(failures[0]!.context["reason"])).toMatch(/^policy evaluation failed: refstate/)
  })

  it("skips evaluation for an empty reference state and still returns the replay and boot aggregates", () => {
    const log = gceLog()
    const r = evaluateMeasuredBoot({ log, quotedPcrs: [], refstate: {} }, rejectAllPolicy)
    expect(r.failures).toEqual([])
    expect(r.bootAggregates.sha256).toContain("0ef0ff51f6f7a4e6a93262ab47f23d4165e780d51b1762385821fecdda61b13a")
  })

  it("accept-all passes and reject-all fails with measured_boot.policy_reject-all", () => {
    const log = gceLog()
    const input = { log, quotedPcrs: quoteOf(log), refstate: { any: 1 } }
    expect(types(input, acceptAllPolicy)).toEqual([])
    expect(types(input, rejectAllPolicy)).toEqual(["measured_boot.policy_reject-all"])
  })

  it("turns an unparseable log into measured_boot.parser failures", () => {
    expect(types({ log: keylimeLog("-bogus"), quotedPcrs: [], refstate: { a: 1 } })).toEqual(["measured_boot.parser.tpm2_eventlog.error"])
    expect(types({ log: "%%%", quotedPcrs: [], refstate: { a: 1 } })).toEqual(["measured_boot.parser.log.base64decode"])
  })
})

const pcrsOnly: MbPolicy = { name: "pcrs-only", relevantPcrs: new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]), evaluate: () => "" }

layer(MbPolicyRegistry.with([pcrsOnly]))("MbPolicyRegistry", (it) => {
  it.effect("looks policies up by name, including added ones", () =>
    Effect.gen(function* () {
      const log = gceLog()
      const ok = yield* evaluateMeasuredBootNamed({ log, quotedPcrs: quoteOf(log), refstate: { a: 1 } }, "pcrs-only")
      expect(ok.failures).toEqual([])
      const changed = withBootAppChanged(log, 0)
      const bad = yield* evaluateMeasuredBootNamed({ log, quotedPcrs: quoteOf(changed), refstate: { a: 1 } }, "pcrs-only")
      expect(bad.failures.map((f) => f.type)).toEqual(["measured_boot.invalid_pcr_4"])
    })
  )

  it.effect("fails with UnknownMbPolicyError for an unknown name", () =>
    Effect.gen(function* () {
      const r = yield* Effect.either(evaluateMeasuredBootNamed({ log: gceLog(), quotedPcrs: [], refstate: {} }, "nope"))
      expect(Either.isLeft(r) && r.left._tag).toBe("UnknownMbPolicyError")
      expect(Either.isLeft(r) && r.left.known).toEqual(["accept-all", "reject-all", "example", "pcrs-only"])
    })
  )
})
