/**
 * Deterministic ima-ng list generator for bench/ima.ts: realistic paths, sha256 file digests from a
 * seeded PRNG, template hashes computed exactly as the kernel does (sha1 or sha256 column), plus the
 * PCR 10 values per bank and a matching runtime policy.
 */
import * as crypto from "node:crypto"
import type { RuntimePolicyEncoded } from "../schemas/RuntimePolicy.js"

const dirs = [
  "/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu", "/usr/lib/systemd", "/usr/libexec", "/etc",
  "/usr/lib/python3/dist-packages/requests", "/usr/share/perl5", "/usr/lib/modules/6.1.0-18-amd64/kernel/drivers/net",
  "/opt/app/lib", "/var/lib/dpkg/info", "/usr/local/bin", "/tmp/build"
]
const stems = ["libssl", "systemd-journald", "python3.11", "bash", "ls", "ld-linux-x86-64", "libc", "sshd", "nginx", "node", "libcrypto", "cron", "__init__", "utils", "e1000e"]
const exts = ["", ".so.3", ".so.6", ".py", ".pm", ".ko", ".conf", ".sh", ".cache"]

/** xorshift32: fast, deterministic, good enough for fake digests. */
const prng = (seed: number) => {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s
  }
}

export interface Generated {
  readonly text: string
  /** Running PCR 10 after the chunk, per bank (continues from `initial`). */
  readonly pcrs: { sha1: Buffer; sha256: Buffer }
  readonly paths: Array<string>
  readonly digests: Array<string>
}

export const pathOf = (i: number): string => {
  const r = prng(i * 2654435761 + 7)
  const d = dirs[r() % dirs.length]!
  return `${d}/${stems[r() % stems.length]!}-${i.toString(36)}${exts[r() % exts.length]!}`
}

export const digestOf = (i: number): string => {
  const r = prng(i * 40503 + 11)
  let s = ""
  for (let k = 0; k < 8; k++) s += r().toString(16).padStart(8, "0")
  return s
}

/**
 * Entries [from, to). `column` picks the template-hash column (sha256 like
 * ascii_runtime_measurements_sha256, or sha1 like the default file). Entry 0 is boot_aggregate.
 */
export const generate = (
  from: number,
  to: number,
  column: "sha1" | "sha256",
  initial?: { sha1: Buffer; sha256: Buffer }
): Generated => {
  let p1 = initial?.sha1 ?? Buffer.alloc(20)
  let p256 = initial?.sha256 ?? Buffer.alloc(32)
  const lines: Array<string> = []
  const paths: Array<string> = []
  const digests: Array<string> = []
  // Template data written in place: 4 + "sha256:\0" + 32 + 4 + name + NUL.
  const data = Buffer.alloc(4096)
  const ext1 = Buffer.alloc(40)
  const ext256 = Buffer.alloc(64)
  for (let i = from; i < to; i++) {
    const path = i === 0 ? "boot_aggregate" : pathOf(i)
    const digest = digestOf(i)
    data.writeUInt32LE(40, 0)
    data.write("sha256:\0", 4, "latin1")
    data.write(digest, 12, "hex")
    const nameLen = data.write(path, 48, "utf8")
    data.writeUInt32LE(nameLen + 1, 44)
    data[48 + nameLen] = 0
    const view = data.subarray(0, 49 + nameLen)
    const t1 = hash("sha1", view)
    const t256 = hash("sha256", view)
    p1.copy(ext1, 0)
    t1.copy(ext1, 20)
    p1 = hash("sha1", ext1)
    p256.copy(ext256, 0)
    t256.copy(ext256, 32)
    p256 = hash("sha256", ext256)
    lines.push(`10 ${(column === "sha1" ? t1 : t256).toString("hex")} ima-ng sha256:${digest} ${path}`)
    paths.push(path)
    digests.push(digest)
  }
  return { text: lines.join("\n") + "\n", pcrs: { sha1: p1, sha256: p256 }, paths, digests }
}

// crypto.hash: one-shot, no Hash object per call (Node ≥ 20.12).
const hash = (alg: string, data: Uint8Array): Buffer => crypto.hash(alg, data, "buffer")

/** Policy allowing entries [0, n): digests per path, plus excludes that match nothing generated. */
export const policyFor = (n: number, logHashAlg: "sha1" | "sha256"): RuntimePolicyEncoded => {
  const digests: Record<string, Array<string>> = {}
  for (let i = 0; i < n; i++) digests[i === 0 ? "boot_aggregate" : pathOf(i)] = [digestOf(i)]
  return {
    meta: { version: 1, generator: 0 },
    release: 0,
    digests,
    excludes: ["/proc/.*", "/sys/.*", "/dev/.*", "/run/.*", "/var/log/.*"],
    keyrings: {},
    ima: { ignored_keyrings: [], log_hash_alg: logHashAlg, dm_policy: null },
    "ima-buf": {},
    "verification-keys": ""
  }
}
