/**
 * The portable crypto port (@noble/hashes, @noble/curves, WebCrypto) beside the node:crypto one, on
 * the two hot paths: IMA entries verified per second (a generated list and its policy; two SHA-256
 * per entry: template hash and PCR 10 extend) and Keylime quotes verified per second (distinct
 * quotes, RSA-2048 RSASSA and ECC P-256 ECDSA AKs, signature checks answered in batches of 50 by
 * `settleSignatures`). Measured in node with each port in a process of its own (so the JIT of one
 * is not shaped by the other), the two alternating, and in headless Chromium (Debian's,
 * playwright-core) with the portable port, the same code bundled by esbuild. Ratios are to the
 * node:crypto port in node, same run.
 *
 *   npm run bench -- portable [entries] [quotes]
 */
import { Either } from "effect"
import { build } from "esbuild"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import { useCrypto } from "../src/crypto/active.js"
import { nodeCryptoPort } from "../src/crypto/node.js"
import { makePortableCryptoPort } from "../src/crypto/portable.js"
import { loadRuntimePolicy } from "../src/ima/load.js"
import { marshalTpm2bPublic } from "../src/tpm/public.js"
import { makeAk, makeQuote } from "../test/tpm/quoteFixture.js"
import { generate, policyFor } from "./_imaGen.js"
import { type BenchQuote, imaRate, quoteRate } from "./_portableWork.js"

const args = process.argv.slice(2)
const child = args[0] === "--child" ? (args[1] as "node" | "portable") : undefined
const numbers = child === undefined ? args : args.slice(2)
const ENTRIES = Number(numbers[0] ?? 20_000)
const QUOTES = Number(numbers[1] ?? 300)
const ROUNDS = 5
const BATCH = 50

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const list = generate(0, ENTRIES, "sha256").text
const policyJson = JSON.stringify(policyFor(ENTRIES, "sha256"))
const policy = Either.getOrThrow(loadRuntimePolicy(policyJson)).policy
const aks = { rsa: makeAk("rsa"), ecc: makeAk("ecc") }
const quotes = Object.fromEntries(Object.entries(aks).map(([k, ak]) => [k, Array.from({ length: QUOTES }, (): BenchQuote => {
  const q = makeQuote(ak, [{ hash: "sha256", pcrs: [0, 1, 10, 16] }])
  return { quote: q.quote, nonce: q.nonce }
})])) as Record<"rsa" | "ecc", Array<BenchQuote>>

interface Rates {
  readonly ima: number
  readonly rsa: number
  readonly ecc: number
}

if (child !== undefined) {
  // One port in a process of its own: its JIT sees only that port's code.
  const port = () => (child === "node" ? nodeCryptoPort()! : makePortableCryptoPort())
  useCrypto(port())
  imaRate(list, policy, 1)
  const rates: Rates = {
    ima: imaRate(list, policy, 3),
    rsa: (useCrypto(port()), await quoteRate(marshalTpm2bPublic(aks.rsa.public), quotes.rsa, BATCH)),
    ecc: (useCrypto(port()), await quoteRate(marshalTpm2bPublic(aks.ecc.public), quotes.ecc, BATCH))
  }
  console.log(JSON.stringify(rates))
  process.exit(0)
}

console.log(`node ${process.version}; ${ENTRIES} IMA entries, ${QUOTES} quotes per AK kind; medians of ${ROUNDS} rounds (the machine may be shared: the same-run ratios are what counts)`)

// --- node, each port in its own process, alternating ----------------------------------------------
const inNode = { node: [] as Array<Rates>, portable: [] as Array<Rates> }
for (let r = 0; r < ROUNDS; r++) {
  for (const which of r % 2 === 0 ? (["node", "portable"] as const) : (["portable", "node"] as const)) {
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/portable.ts", "--child", which, String(ENTRIES), String(QUOTES)], { encoding: "utf8", maxBuffer: 1 << 20 })
    inNode[which].push(JSON.parse(out.trim().split("\n").pop()!) as Rates)
  }
}

// --- Chromium, the portable port -----------------------------------------------------------------
const dir = mkdtempSync(join(tmpdir(), "attest-bench-portable-"))
const bundled = await build({ entryPoints: ["bench/_portableBrowser.ts"], bundle: true, write: false, platform: "browser", format: "iife", target: "es2022", minify: true, logLevel: "warning" })
writeFileSync(join(dir, "bench.js"), bundled.outputFiles[0]!.text)
// a file:// page is a secure context (WebCrypto), as the offline check page is
writeFileSync(join(dir, "bench.html"), `<!doctype html><meta charset="utf-8"><script src="bench.js"></script>`)
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  timeout: 120_000
})
/** What bench/_portableBrowser.ts puts on globalThis. */
interface Api {
  ima(list: string, policy: string, rounds: number): number
  quotes(ak: string, q: ReadonlyArray<{ quote: string; nonce: string }>, batch: number): Promise<number>
}
const inChromium = { ima: [] as Array<number>, rsa: [] as Array<number>, ecc: [] as Array<number> }
let chromiumVersion = ""
try {
  chromiumVersion = browser.version()
  const page = await browser.newPage()
  await page.goto(pathToFileURL(join(dir, "bench.html")).href)
  // evaluated in the page: no closure over this module
  await page.evaluate(([l, p]) => (globalThis as unknown as { attestBench: Api }).attestBench.ima(l!, p!, 1), [list, policyJson])
  const wire = (kind: "rsa" | "ecc") => ({ ak: Buffer.from(marshalTpm2bPublic(aks[kind].public)).toString("base64"), quotes: quotes[kind].map((q) => ({ quote: q.quote, nonce: Buffer.from(q.nonce).toString("base64") })) })
  for (let r = 0; r < ROUNDS; r++) {
    inChromium.ima.push(await page.evaluate(([l, p]) => (globalThis as unknown as { attestBench: Api }).attestBench.ima(l!, p!, 1), [list, policyJson]))
    for (const kind of ["rsa", "ecc"] as const) {
      const w = wire(kind)
      inChromium[kind].push(await page.evaluate(([ak, q, b]) => (globalThis as unknown as { attestBench: Api }).attestBench.quotes(ak as string, q as Array<{ quote: string; nonce: string }>, b as number), [w.ak, w.quotes, BATCH] as const))
    }
  }
} finally {
  await browser.close()
  rmSync(dir, { recursive: true, force: true })
}

const row = (what: string, unit: string, n: number, p: number, c: number) =>
  console.log(`${what.padEnd(16)} node:crypto ${n.toFixed(0).padStart(8)} ${unit}   portable in node ${p.toFixed(0).padStart(8)} ${unit} (${(p / n).toFixed(2)}x)   portable in Chromium ${c.toFixed(0).padStart(8)} ${unit} (${(c / n).toFixed(2)}x)`)
const of = (runs: ReadonlyArray<Rates>, k: keyof Rates) => median(runs.map((r) => r[k]))
const m = {
  ima: { n: of(inNode.node, "ima"), p: of(inNode.portable, "ima"), c: median(inChromium.ima) },
  rsa: { n: of(inNode.node, "rsa"), p: of(inNode.portable, "rsa"), c: median(inChromium.rsa) },
  ecc: { n: of(inNode.node, "ecc"), p: of(inNode.portable, "ecc"), c: median(inChromium.ecc) }
}
console.log(`Chromium ${chromiumVersion}`)
row("IMA entries", "/s", m.ima.n, m.ima.p, m.ima.c)
row("RSA quotes", "/s", m.rsa.n, m.rsa.p, m.rsa.c)
row("ECC quotes", "/s", m.ecc.n, m.ecc.p, m.ecc.c)
console.log(`BENCH ima_entries_per_s_node ${m.ima.n.toFixed(0)} 1/s`)
console.log(`BENCH ima_entries_per_s_portable ${m.ima.p.toFixed(0)} 1/s`)
console.log(`BENCH ima_entries_per_s_chromium ${m.ima.c.toFixed(0)} 1/s`)
console.log(`BENCH ima_portable_ratio ${(m.ima.p / m.ima.n).toFixed(3)}`)
console.log(`BENCH ima_chromium_ratio ${(m.ima.c / m.ima.n).toFixed(3)}`)
console.log(`BENCH quote_rsa_per_s_node ${m.rsa.n.toFixed(0)} 1/s`)
console.log(`BENCH quote_rsa_per_s_portable ${m.rsa.p.toFixed(0)} 1/s`)
console.log(`BENCH quote_rsa_per_s_chromium ${m.rsa.c.toFixed(0)} 1/s`)
console.log(`BENCH quote_portable_ratio ${(m.rsa.p / m.rsa.n).toFixed(3)}`)
console.log(`BENCH quote_chromium_ratio ${(m.rsa.c / m.rsa.n).toFixed(3)}`)
console.log(`BENCH quote_ecc_per_s_node ${m.ecc.n.toFixed(0)} 1/s`)
console.log(`BENCH quote_ecc_per_s_portable ${m.ecc.p.toFixed(0)} 1/s`)
console.log(`BENCH quote_ecc_per_s_chromium ${m.ecc.c.toFixed(0)} 1/s`)
console.log(`BENCH quote_ecc_portable_ratio ${(m.ecc.p / m.ecc.n).toFixed(3)}`)
console.log(`BENCH quote_ecc_chromium_ratio ${(m.ecc.c / m.ecc.n).toFixed(3)}`)
