/**
 * Fuzz inputs as JSON files: what fast-check generates (bytes, bigints, undefined, -0, NaN) written
 * with tags so a corpus file reads back as the same value, and named by a hash of that text so a
 * failure found twice is one file.
 */
import { createHash } from "node:crypto"

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [k: string]: Json }

export const toJson = (v: unknown): Json => {
  if (v === undefined) return { $undefined: true }
  if (v === null || typeof v === "boolean" || typeof v === "string") return v
  if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0) ? v : { $number: Object.is(v, -0) ? "-0" : String(v) }
  if (typeof v === "bigint") return { $bigint: v.toString() }
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString("base64") }
  if (Array.isArray(v)) return v.map(toJson)
  if (typeof v === "object") {
    const o: Record<string, Json> = {}
    for (const [k, x] of Object.entries(v)) o[k] = toJson(x)
    // an object whose own key is one of the tags is written inside $object so it reads back as itself
    return Object.keys(o).some((k) => k.startsWith("$")) ? { $object: o } : o
  }
  throw new Error(`a fuzz input cannot hold a ${typeof v}`)
}

export const fromJson = (j: unknown): unknown => {
  if (j === null || typeof j !== "object") return j
  if (Array.isArray(j)) return j.map(fromJson)
  const o = j as Record<string, unknown>
  if ("$undefined" in o) return undefined
  if ("$number" in o) return Number(o["$number"])
  if ("$bigint" in o) return BigInt(o["$bigint"] as string)
  if ("$bytes" in o) return new Uint8Array(Buffer.from(o["$bytes"] as string, "base64"))
  const inner = "$object" in o ? (o["$object"] as Record<string, unknown>) : o
  return Object.fromEntries(Object.entries(inner).map(([k, x]) => [k, fromJson(x)]))
}

/** The file text of one input and the name it is stored under. */
export const corpusEntry = (input: unknown): { readonly name: string; readonly text: string } => {
  const text = JSON.stringify(toJson(input), null, 1) + "\n"
  return { name: createHash("sha256").update(text).digest("hex").slice(0, 16) + ".json", text }
}
