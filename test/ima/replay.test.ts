import { expect, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import { Either } from "effect"
import { parseEntry, parseList } from "../../src/ima/entry.js"
import { replayPcr10 } from "../../src/ima/replay.js"
import { verifyIma } from "../../src/ima/verify.js"
import { readVector, readVectorText } from "../support/vectors.js"
import { AFTER7, FINAL, hex, tpmList, tpmList256, tpmList7 } from "./helpers.js"
import { eachCryptoPort } from "../support/cryptoPorts.js"

const replayHex = (text: string) => {
  const r = Either.getOrThrow(replayPcr10(text, ["sha1", "sha256"]))
  return { sha1: Buffer.from(r["sha1"]!).toString("hex"), sha256: Buffer.from(r["sha256"]!).toString("hex") }
}

eachCryptoPort("PCR 10 replay of the vector lists", () => {
  it("replays the tpm list to the PCR 10 of quotes 2-4 in both banks", () => {
    expect(replayHex(tpmList())).toEqual(FINAL)
  })
  it("replays the first 7 entries to the PCR 10 of quote 1", () => {
    expect(replayHex(tpmList7())).toEqual(AFTER7)
  })
  it("replays the sha256-column list to the same values (the column does not enter the PCR)", () => {
    expect(replayHex(tpmList256())).toEqual(FINAL)
  })
  it("matches the recorded PCR 10 after every entry of the trace", () => {
    const trace = JSON.parse(readVectorText("tpm", "ima", "pcr10_trace.json")).trace as Array<{ entry: number; pcr10_sha1: string; pcr10_sha256: string }>
    const lines = tpmList().split("\n").filter((l) => l !== "")
    for (const t of trace) {
      expect(replayHex(lines.slice(0, t.entry).join("\n"))).toEqual({ sha1: t.pcr10_sha1, sha256: t.pcr10_sha256 })
    }
  })
  it("replays the swtpm-quote-1 log to its quoted sha256 PCR 10", () => {
    expect(replayHex(readVectorText("keylime", "generated", "swtpm-quote-1", "ima-log.txt")).sha256).toBe(
      "7e99dba391d6bebd924a5be9a87f76707ff3908b2ed5ae9939ede823d2872f80"
    )
  })
  it("recomputes every template hash of the real rust-keylime and keylime lists", () => {
    for (const path of [
      ["rust-keylime", "keylime-agent", "test-data", "ima", "ascii_runtime_measurements"],
      ["rust-keylime", "keylime", "test-data", "ima_log.txt"],
      ["keylime", "test", "data", "create-runtime-policy", "ima-log-sha256"],
      ["tpm", "ima", "ascii_runtime_measurements"],
      ["tpm", "ima", "ascii_runtime_measurements_sha256"]
    ]) {
      const r = verifyIma({ list: readVectorText(...path), startEntry: 0, banks: ["sha1", "sha256"] })
      expect(r.failures, path.join("/")).toEqual([])
    }
    const big = verifyIma({ list: readVectorText("rust-keylime", "keylime-agent", "test-data", "ima", "ascii_runtime_measurements"), startEntry: 0 })
    expect(big.entries).toBe(826)
  })
  it("encodes boot_aggregate template data byte for byte as the kernel does", () => {
    const e = Either.getOrThrow(parseEntry(tpmList().split("\n")[0]!))
    expect(Buffer.from(e.templateData)).toEqual(Buffer.from(readVector("tpm", "ima", "boot_aggregate_template_data.bin")))
  })
  it("rejects the invalid rust-keylime log with a typed error naming line 1", () => {
    const r = parseList(readVectorText("rust-keylime", "keylime", "test-data", "invalid_ima_log.txt"))
    expect(Either.isLeft(r) && r.left._tag === "ImaParseError" && r.left.line === 1).toBe(true)
  })
  it("treats the empty list as no entries", () => {
    const r = verifyIma({ list: readVectorText("rust-keylime", "keylime", "test-data", "empty_ima_log.txt"), startEntry: 0, quotedPcr10: { sha256: new Uint8Array(32) } })
    expect(r.failures).toEqual([])
    expect(r.entries).toBe(0)
  })
  it("extends a violation (all-zero template hash) as all 0xFF and skips its hash check", () => {
    const line = "10 0000000000000000000000000000000000000000 ima-ng sha256:" + "ab".repeat(32) + " /var/log/x"
    const r = verifyIma({ list: line, startEntry: 0, banks: ["sha256"] })
    expect(r.failures).toEqual([])
    const expected = crypto.createHash("sha256").update(Buffer.alloc(32)).update(Buffer.alloc(32, 0xff)).digest("hex")
    expect(r.pcrs.sha256).toBe(expected)
    expect(verifyIma({ list: line, startEntry: 0, tomtouFailures: true }).failures.map((f) => f.type)).toEqual(["ima.validation.tomtou"])
    expect(hex(expected).length).toBe(32)
  })
})
