import { expect, it } from "@effect/vitest"
import { Either } from "effect"
import { parseEventLog, parseEventLogBase64, parseEventLogInput } from "../../src/boot/eventLog.js"
import { EV } from "../../src/boot/eventTypes.js"
import { bootAggregates, replayPcrs } from "../../src/boot/replay.js"
import { toHex } from "../../src/boot/text.js"
import { parsePcrBlob } from "../../src/tpm/pcrBlob.js"
import { verifyQuote } from "../../src/tpm/verifyQuote.js"
import type { PcrValues } from "../../src/tpm/Tpm.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { gceLog, keylimeLog, mbLogB64, parsed, rustUefiLog, secureBootLog, yamlPcrs } from "./support.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const hexOf = (values: PcrValues, hash: string, pcr: number) => {
  const v = values.find((b) => b.hash === hash)?.values.get(pcr)
  return v === undefined ? undefined : toHex(v)
}
const PCRS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14]

/** sha256 PCRs recorded by tpm2_eventlog 5.4 for the Keylime and rust-keylime logs (PCR 0 aside, see below). */
const recorded: Record<string, Record<number, string>> = {
  secureboot: {
    0: "0d993cf4baec1dc2a47013c8bcc13e1593d5e6ba9cc4630f422e98d310212aff",
    4: "ce5e8ef15f4c1db94e24b2f458dc21c96dd3a530ecf4ee4c9d70bd9a3517088e",
    7: "2f96e1f1bf7f91b6f17e1bcb823e717e43782ff75481237711f2ed7bf8a8edb1",
    9: "acd038dd8ec2f7e42a7c5c68e07ae6713962d8835412b1f5632c7e63da36ffc2",
    14: "66c465262f16d108fd77f2f94c4ae0040f81b3168242a827fcf5efcd812de053"
  },
  plain: {
    4: "a77ff9ab296e10186dd7e7082eab94e795b1ba9d84e920b09cf6272f68c2711c",
    7: "741fd028c51b4d2fbdcc7f28014cc758d17ccc1fe2ea7ca17b0e8009480a557c",
    8: "f5dc3feeda9a15dbcc11c6d99572bd063e8b0a435c222b4352c466726b0f5daf",
    14: "17cdefd9548f4383b67a37a901673bf3c8ded6f619d36c8007562de1d93c81cc"
  },
  mbLog: {
    0: "9d24421442591dbdb8e8220ae8f26e7ebac76eb52cf3ced2d2b753d747e37b88",
    4: "8a2eb1c3b1e3dec41f491ec82ae6a66306fa4dfd4b35589d7f19092b00aef5d8",
    9: "cf5d36fa9315595ed2624d10d5f8565452c62fae3c2b069f7421c12f8418a7bc",
    14: "43f0f3919109c5bb9ab6eb7a25857cc9c1eec6b512b6f44034de4b85a1e3d428"
  },
  rust: {
    0: "5c4103d6dcf2a90c30a646cc090a8de10cbe1c4a1f21c0d7d4f2f4836b2055da",
    4: "204e40739947a1b8dc904066dbe78335d53c1df53f20614cc2b365a7e6d6b605",
    8: "245709f050008ac66aeef3e926f47ba7ed7a0f74dde1089db4acec9bcfc31ef1",
    9: "5775cc79e0de21ac918c2ac0a879b34f09fb4c6c4507f43c8796c9eb3c9fdb40"
  }
}

eachCryptoPort("TCG2 event log parser and replay", () => {
  it("parses the GCE log: Spec ID header with three banks, 111 measured events, the event types named", () => {
    const log = parsed(gceLog())
    expect(log.algorithms.map((a) => a.alg)).toEqual(["sha1", "sha256", "sha384"])
    expect(log.events).toHaveLength(112)
    expect(log.events[0]!.decoded.kind).toBe("specId")
    expect(log.events.filter((e) => e.typeName === "EV_IPL")).toHaveLength(84)
    expect(log.events.filter((e) => e.type === EV.SEPARATOR)).toHaveLength(8)
    const crtm = log.events.find((e) => e.type === EV.S_CRTM_VERSION)!
    expect(crtm.decoded).toEqual({ kind: "string", text: "GCE Virtual Firmware v1" })
  })

  it("replays the GCE log to the PCRs recorded in replayed_pcrs.txt and tpm2_eventlog's pcrs section, in every bank", () => {
    const replayed = replayPcrs(parsed(gceLog()))
    const lines = readVectorText("tpm", "eventlog", "replayed_pcrs.txt").trim().split("\n")
    expect(lines.length).toBe(22)
    for (const line of lines) {
      const [bank, pcr, hex] = line.split(" ")
      expect(hexOf(replayed, bank!, Number(pcr))).toBe(hex)
    }
    const yaml = yamlPcrs(readVectorText("tpm", "eventlog", "event-gce-ubuntu-2104-log.tpm2_eventlog.yaml"))
    for (const bank of ["sha1", "sha256", "sha384"]) {
      for (const p of PCRS) expect(hexOf(replayed, bank, p)).toBe(yaml.get(bank)!.get(p))
    }
  })

  it("replays the GCE log to PCRs 0-9 and 14 of the swtpm quote over them (quote3, verified with the AK)", () => {
    const blob = Either.getOrThrow(parsePcrBlob(readVector("tpm", "quotes", "quote3_ecc_sha256.pcrs")))
    const verified = verifyQuote({
      akPublic: readVector("tpm", "ak", "ak_ecc.pub"),
      attest: readVector("tpm", "quotes", "quote3_ecc_sha256.attest"),
      signature: readVector("tpm", "quotes", "quote3_ecc_sha256.sig"),
      pcrs: blob,
      nonce: new TextEncoder().encode("Ec7Gj1Lm4Np9Qs3Tu6Wx")
    })
    expect(Either.isRight(verified)).toBe(true)
    const replayed = replayPcrs(parsed(gceLog()))
    for (const p of PCRS) expect(hexOf(replayed, "sha256", p)).toBe(hexOf(blob.values, "sha256", p))
  })

  it("gives the GCE log's boot aggregates from tpm-facts §4.3 (sha256 10-PCR, sha1 8-PCR)", () => {
    const agg = bootAggregates(replayPcrs(parsed(gceLog())))
    expect(agg.sha256).toContain("0ef0ff51f6f7a4e6a93262ab47f23d4165e780d51b1762385821fecdda61b13a")
    expect(agg.sha1?.[0]).toBe("28b666773daac9d850e57911cf6ef493aae0c78f")
    expect(agg.sha256).toHaveLength(2)
    expect(agg.sha384).toHaveLength(2)
  })

  it("replays the Keylime, mb_log.b64 and rust-keylime logs to the PCRs tpm2_eventlog recorded", () => {
    const cases: Array<[string, Uint8Array]> = [
      ["secureboot", secureBootLog()],
      ["plain", keylimeLog()],
      ["rust", rustUefiLog()]
    ]
    for (const [name, bytes] of cases) {
      const replayed = replayPcrs(parsed(bytes))
      for (const [p, hex] of Object.entries(recorded[name]!)) expect([name, p, hexOf(replayed, "sha256", Number(p))]).toEqual([name, p, hex])
    }
    const b64 = Either.getOrThrow(parseEventLogBase64(mbLogB64()))
    for (const [p, hex] of Object.entries(recorded["mbLog"]!)) expect(hexOf(replayPcrs(b64), "sha256", Number(p))).toBe(hex)
  })

  it("starts PCR 0 at the StartupLocality (3) of the Keylime log and does not extend EV_NO_ACTION events", () => {
    const log = parsed(keylimeLog())
    expect(log.startupLocality).toBe(3)
    expect(log.events[1]!.decoded).toEqual({ kind: "startupLocality", locality: 3 })
    // PCR 0 = 00…03 extended with the PCR 0 events. tpm2_eventlog 5.4 prints 1877eacb…: it starts from
    // zero and extends the EV_NO_ACTION events' zero digests, which a TPM never does (PFP spec §10.4.5.3).
    expect(hexOf(replayPcrs(log), "sha256", 0)).toBe("0ee9a7feba8f4172f1a7451594aa5731665a4d353ac61814042ce107a00742f2")
    expect(hexOf(replayPcrs({ ...log, startupLocality: 0 }), "sha256", 0)).toBe("a92ee8923b8fce7d2158298bc5c9b15b7f7de8264944696e672591c0c372f771")
  })

  it("decodes variables, signature lists, boot applications' device paths, GPT and MOK strings", () => {
    const log = parsed(secureBootLog())
    const vars = log.events.flatMap((e) => (e.decoded.kind === "variable" ? [e.decoded] : []))
    const sb = vars.find((v) => v.unicodeName === "SecureBoot")!
    expect(sb.variableName).toBe("8be4df61-93ca-11d2-aa0d-00e098032b8c")
    expect(sb.value).toEqual({ kind: "enabled", enabled: true })
    const db = vars.find((v) => v.unicodeName === "db" && v.value.kind === "signatureLists")!
    expect(db.value.kind === "signatureLists" && db.value.lists[0]!.SignatureType).toBe("a5c059a1-94e4-4aa7-87b5-ab155c2bf072")
    const dbx = vars.find((v) => v.unicodeName === "dbx")!
    expect(dbx.value.kind === "signatureLists" && dbx.value.lists[0]!.SignatureType).toBe("c1c41626-504c-4092-aca9-41f936934328")
    const apps = log.events.filter((e) => e.type === EV.EFI_BOOT_SERVICES_APPLICATION)
    expect(apps).toHaveLength(3)
    const grub = apps[1]!.decoded
    expect(grub.kind === "imageLoad" && grub.devicePath.text).toBe("File(\\EFI\\redhat\\grubx64.efi)")
    const shim = apps[0]!.decoded
    expect(shim.kind === "imageLoad" && shim.devicePath.nodes.some((n) => n.kind === "hardDrive" && n.format === "GPT")).toBe(true)
    expect(shim.kind === "imageLoad" && shim.devicePath.nodes.some((n) => n.kind === "file" && /shimx64\.efi$/i.test(n.path))).toBe(true)
    const gpt = log.events.find((e) => e.type === EV.EFI_GPT_EVENT)!.decoded
    expect(gpt.kind === "gpt" && gpt.partitions.length).toBeGreaterThan(1)
    expect(gpt.kind === "gpt" && gpt.partitions[0]!.typeGuid).toBe("c12a7328-f81f-11d2-ba4b-00a0c93ec93b")
    const mok = log.events.filter((e) => e.pcr === 14 && e.decoded.kind === "string").map((e) => (e.decoded.kind === "string" ? e.decoded.text : ""))
    expect(mok).toEqual(["MokList", "MokListX", "MokListTrusted"])
    const actions = log.events.filter((e) => e.type === EV.EFI_ACTION).map((e) => (e.decoded.kind === "string" ? e.decoded.text : ""))
    expect(actions).toContain("Exit Boot Services Invocation")
  })

  it("rejects the empty log with a typed error", () => {
    const r = parseEventLog(keylimeLog("-empty"))
    expect(Either.isLeft(r) && r.left._tag).toBe("EventLogParseError")
    expect(Either.isLeft(r) && r.left.reason).toMatch(/empty/)
  })

  it("rejects the bogus log (text) as binary and as CLI input with a typed error naming the event, field and offset", () => {
    const r = parseEventLog(keylimeLog("-bogus"))
    expect(Either.isLeft(r)).toBe(true)
    if (Either.isLeft(r)) {
      expect(r.left).toMatchObject({ _tag: "EventLogParseError", eventIndex: 0 })
      expect(r.left.message).toMatch(/^event 0, \w+/)
    }
    expect(Either.isLeft(parseEventLogInput(keylimeLog("-bogus")))).toBe(true)
  })

  it("rejects a log whose first event is not the Spec ID header, naming the field", () => {
    const bytes = new Uint8Array(gceLog())
    bytes[4] = 0x08 // EventType of event 0
    const r = parseEventLog(bytes)
    expect(Either.isLeft(r) && r.left.field).toBe("EventType")
    expect(Either.isLeft(r) && r.left.offset).toBe(4)
  })

  it("rejects an absurd EventSize with the event index and the byte offset of the field", () => {
    const log = parsed(gceLog())
    const e = log.events[5]!
    const bytes = new Uint8Array(gceLog())
    const sizeAt = e.offset + 12 + e.digests.reduce((n, d) => n + 2 + d.digest.length, 0)
    new DataView(bytes.buffer).setUint32(sizeAt, 0x7fffffff, true)
    const r = parseEventLog(bytes)
    expect(Either.isLeft(r) && { i: r.left.eventIndex, f: r.left.field, o: r.left.offset }).toEqual({ i: 5, f: "EventSize", o: sizeAt })
  })

  it("reads base64 logs as the agent sends them, and tells binary from base64 input", () => {
    const fromB64 = Either.getOrThrow(parseEventLogBase64(mbLogB64()))
    const binary = Buffer.from(mbLogB64().replace(/\s+/g, ""), "base64")
    expect(Either.getOrThrow(parseEventLogInput(new Uint8Array(binary))).events.length).toBe(fromB64.events.length)
    expect(Either.getOrThrow(parseEventLogInput(new TextEncoder().encode(mbLogB64()))).events.length).toBe(fromB64.events.length)
    const bad = parseEventLogBase64("not base64!!")
    expect(Either.isLeft(bad) && bad.left.field).toBe("base64")
  })
})
