import { describe, expect, it } from "@effect/vitest"
import { readVectorText } from "../support/vectors.js"
import { NameTable, NameTableBuilder } from "../../src/ima/nameTable.js"
import { scanRuntimePolicy } from "../../src/ima/scanPolicy.js"
import { newAllows } from "./tables.js"

const d = (c: string) => c.repeat(32)

describe("NameTable", () => {
  it("finds every name across chunk boundaries, wide characters included, and no other", () => {
    const names = Array.from({ length: 9000 }, (_, i) => (i % 1000 === 7 ? `/srv/数据/${i}` : `/usr/lib/m${i}.so`))
    const t = NameTable.fromEntries(names.map((n, i) => [n, [(i % 256).toString(16).padStart(2, "0").repeat(32)]]))
    expect(t.size).toBe(9000)
    for (const i of [0, 7, 4095, 4096, 4097, 8191, 8192, 8999]) {
      expect(newAllows(t, names[i]!, (i % 256).toString(16).padStart(2, "0").repeat(32)), names[i]).toBe(true)
      expect(newAllows(t, names[i]!, ((i + 1) % 256).toString(16).padStart(2, "0").repeat(32)), names[i]).toBe(false)
    }
    expect(t.has("/usr/lib/m9000.so")).toBe(false)
    expect(t.get("/srv/数据/4007")).toBe("a7".repeat(32)) // 4007 % 256 = 0xa7
  })
  it("keeps the last of a repeated name, as JSON.parse does, and lists each name once", () => {
    const t = NameTable.fromEntries([["/a", [d("1")]], ["/b", [d("2")]], ["/a", [d("3"), d("4")]]])
    expect(t.size).toBe(2)
    expect(t.get("/a")).toEqual(new Set([d("3"), d("4")]))
    expect([...t.entries()].map(([n]) => n)).toEqual(["/b", "/a"])
    expect(newAllows(t, "/a", d("1"))).toBe(false)
  })
  it("drops the alg: prefix, lower-cases, and compares digests of every length by bytes", () => {
    const t = NameTable.fromEntries([["boot_aggregate", ["sha256:" + "AB".repeat(32), "cd".repeat(20), "ef".repeat(16)]]])
    for (const hex of ["ab".repeat(32), "cd".repeat(20), "ef".repeat(16)]) expect(newAllows(t, "boot_aggregate", hex)).toBe(true)
    expect(newAllows(t, "boot_aggregate", "ab".repeat(20))).toBe(false)
  })
  it("checks digests against Keylime's rule as they are added", () => {
    const b = new NameTableBuilder()
    b.addName("/x")
    expect([d("a"), "sha1:" + d("b"), "a".repeat(41), "A".repeat(64), "ab", ":" + d("a"), "sha-1:" + d("a")].map((x) => b.addDigestHex(x))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
      false
    ])
    const t = b.build()
    // the odd-length digest is allowed by the rule but can match no entry digest, so it is not kept
    expect(t.get("/x")).toEqual(new Set([d("a"), d("b")]))
  })
  it("is empty when built from nothing", () => {
    expect(NameTable.empty.size).toBe(0)
    expect(NameTable.empty.has("")).toBe(false)
  })
})

describe("the loader's one-pass scan", () => {
  it("takes Keylime's own policies without falling back to JSON.parse", () => {
    for (const f of ["runtime-policy-test.json", "create-runtime-policy/policy-sha256", "sign-runtime-policy/runtime-policy.json"]) {
      const scanned = scanRuntimePolicy(readVectorText("keylime", "test", "data", ...f.split("/")))
      expect(scanned?.tables.digests?.size, f).toBeGreaterThan(0)
    }
  })
  it("leaves escaped digests, empty lists and repeated top-level keys to the general path", () => {
    const base = (digests: string) => `{"meta": {"version": 1}, "digests": ${digests}}`
    expect(scanRuntimePolicy(base(`{"/a\\u00e9": ["${d("a")}"]}`))?.tables.digests?.get("/aé")).toBe(d("a"))
    expect(scanRuntimePolicy(base(`{"/a": ["\\u0061${"a".repeat(63)}"]}`))).toBeUndefined()
    expect(scanRuntimePolicy(base(`{"/a": []}`))).toBeUndefined()
    expect(scanRuntimePolicy(base(`{}, "digests": {}`))).toBeUndefined()
  })
})
