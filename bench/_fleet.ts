/**
 * The simulated agent fleet of bench/verifier-fleet.ts, a process of its own: N pull agents, each
 * on its own HTTPS listener (client certificates of the given CA required, one server certificate
 * for all), half with RSA-2048 RSASSA AKs (a pool of 8 keys: RSA key generation would dominate the
 * start-up) and half with ECC P-256 ECDSA AKs. Each answers `quotes/integrity` with a genuinely
 * signed quote of PCR 10 (its IMA list) and PCR 16 (the NK), its list growing by PER_QUOTE ima-ng
 * entries per quote (files of the shared runtime policy, `fleetPolicyFile(i)`). Prints one JSON
 * line `{agents: [{id, port, ak, enc}], cert}` when listening (cert: the self-signed certificate all serve).
 * FLEET_AK=ecc: every agent with an ECC AK (bench/soak.ts: signing then costs the fleet a fraction).
 *
 *   node --import tsx bench/_fleet.ts <N> <caDir>
 */
import { createHash, generateKeyPairSync } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { Effect, Logger, LogLevel } from "effect"
import { loadOrCreateServerTls } from "../src/agent/tls.js"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { URL } from "node:url"
import { makeRuntimePolicy } from "../schemas/RuntimePolicy.js"
import { encodeImaNg } from "../src/ima/encode.js"
import { marshalAttest, type QuoteAttest } from "../src/tpm/attest.js"
import { TPM_GENERATED_VALUE } from "../src/tpm/constants.js"
import { marshalPcrBlob } from "../src/tpm/pcrBlob.js"
import { marshalTpm2bPublic, nameOf } from "../src/tpm/public.js"
import { encodeQuoteString } from "../src/tpm/quoteString.js"
import { marshalSignature } from "../src/tpm/signature.js"
import { nkPcrValue } from "../src/attestation/evaluate/pcrs.js"
import { makeAk, signAttest, type TestAk } from "../test/tpm/quoteFixture.js"

export const PER_QUOTE = 3
export const INITIAL_ENTRIES = 20
export const POLICY_FILES = 100_000

/** The i-th file of the shared runtime policy: path and sha256 digest of its content. */
export const fleetPolicyFile = (i: number): { path: string; digest: Uint8Array } => ({
  path: `/usr/lib/fleet/pkg-${i % 997}/file-${i}.so`,
  digest: new Uint8Array(createHash("sha256").update(`fleet content ${i}`).digest())
})

/** The shared runtime policy the verifier gets as "fleet": every POLICY_FILES file with its digest. */
export const fleetRuntimePolicy = () => {
  const digests: Record<string, Array<string>> = {}
  for (let i = 0; i < POLICY_FILES; i++) {
    const f = fleetPolicyFile(i)
    digests[f.path] = [Buffer.from(f.digest).toString("hex")]
  }
  return makeRuntimePolicy({ digests, excludes: ["boot_aggregate"] })
}

// one NK for the fleet (made at start): PCR 16 binds it in every agent's quotes as a real agent's would
let fleetNk = ""
let pcr16 = new Uint8Array(32)

interface SimAgent {
  readonly id: string
  readonly ak: TestAk
  readonly enc: string
  /** The list from entry `base` on: what the verifier has moved past is dropped (below). */
  readonly lines: Array<string>
  base: number
  /** The entry the previous quote request asked from. */
  lastFrom: number
  pcr10: Uint8Array
  next: number
  clock: bigint
}

const measure = (a: SimAgent, fileIndex: number) => {
  const f = fleetPolicyFile(fileIndex % POLICY_FILES)
  const e = encodeImaNg(f.digest, f.path, { banks: ["sha256"] })
  a.lines.push(e.line)
  a.pcr10 = new Uint8Array(createHash("sha256").update(a.pcr10).update(e.templateHashes[0]!.digest).digest())
}

const quoteOf = (a: SimAgent, nonce: string): string => {
  const sel = [{ hash: "sha256" as const, pcrs: [10, 16], sizeofSelect: 3 }]
  const digest = createHash(a.ak.hash).update(a.pcr10).update(pcr16).digest()
  a.clock += 2000n
  const attest: QuoteAttest = {
    magic: TPM_GENERATED_VALUE,
    type: "quote",
    qualifiedSigner: nameOf(a.ak.public),
    extraData: new Uint8Array(Buffer.from(nonce, "ascii")),
    clockInfo: { clock: a.clock, resetCount: 1, restartCount: 0, safe: true },
    firmwareVersion: 0x2019102300163636n,
    attested: { pcrSelect: sel, pcrDigest: new Uint8Array(digest) }
  }
  const attestBytes = marshalAttest(attest)
  const signature = marshalSignature(signAttest(a.ak, attestBytes))
  const pcrBlob = marshalPcrBlob({ selection: sel, values: [{ hash: "sha256", values: new Map([[10, a.pcr10], [16, pcr16]]) }] })
  return encodeQuoteString({ attest: attestBytes, signature, pcrBlob })
}

const json = (res: import("node:http").ServerResponse, code: number, results: unknown) => {
  const body = JSON.stringify({ code, status: code === 200 ? "Success" : "Bad Request", results })
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
}

const stats = { connections: 0, quotes: 0 }
const DROP_SEEN = process.env["FLEET_DROP_SEEN"] === "1"

const main = async () => {
  if (process.env["FLEET_STATS"] === "1") setInterval(() => process.stderr.write(`fleet: ${stats.connections} TLS connections, ${stats.quotes} quotes\n`), 5000).unref()
  const n = Number(process.argv[2] ?? 100)
  const caDir = process.argv[3]!
  const read = (f: string) => readFileSync(join(caDir, f), "utf8")
  // one self-signed certificate for the fleet, as agents make them (the verifier pins it per agent)
  const own = await Effect.runPromise(
    loadOrCreateServerTls({ dataDir: mkdtempSync(join(tmpdir(), "attest-fleet-")), agentId: "fleet", names: ["127.0.0.1"] }).pipe(Logger.withMinimumLogLevel(LogLevel.None))
  )
  const tls = { key: own.key, cert: own.cert, ca: read("cacert.crt") }
  fleetNk = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ type: "spki", format: "pem" }).toString()
  pcr16 = new Uint8Array(nkPcrValue("sha256", fleetNk))
  const allEcc = process.env["FLEET_AK"] === "ecc"
  const rsaPool = allEcc ? [] : Array.from({ length: 8 }, () => makeAk("rsa"))
  const bootTime = Math.floor(Date.now() / 1000) - 3600
  const out: Array<{ id: string; port: number; ak: string; enc: string }> = []
  for (let i = 0; i < n; i++) {
    const rsa = !allEcc && i % 2 === 0
    const ak = rsa ? rsaPool[(i / 2) % rsaPool.length]! : makeAk("ecc")
    const a: SimAgent = {
      id: `fleet-${String(i).padStart(5, "0")}`,
      ak,
      enc: rsa ? "rsa2048" : "ecc256",
      lines: [],
      base: 0,
      lastFrom: 0,
      pcr10: new Uint8Array(32),
      next: i * 7919,
      clock: 1_000_000n
    }
    for (let k = 0; k < INITIAL_ENTRIES; k++) measure(a, a.next++)
    const server = https.createServer({ ...tls, requestCert: true, rejectUnauthorized: true, keepAliveTimeout: 60_000 }, (req, res) => {
      const url = new URL(req.url ?? "/", "https://fleet")
      if (req.method === "POST" && url.pathname.endsWith("/keys/vkey")) return req.resume().on("end", () => json(res, 200, {}))
      if (req.method === "POST" && url.pathname.endsWith("/notifications/revocation")) return req.resume().on("end", () => json(res, 200, {}))
      if (req.method !== "GET" || !url.pathname.endsWith("/quotes/integrity")) return json(res, 404, {})
      const nonce = url.searchParams.get("nonce") ?? ""
      const partial = url.searchParams.get("partial") === "1"
      const from = Number(url.searchParams.get("ima_ml_entry") ?? 0)
      stats.quotes++
      for (let k = 0; k < PER_QUOTE; k++) measure(a, a.next++)
      // a real agent's list lives in the kernel; here it would grow the fleet's heap without end
      // (a 30-minute soak: ~2.7 million lines, and major GCs that stall every agent of the
      // process), so with FLEET_DROP_SEEN=1 (one verifier for the fleet's life: the soak) lines
      // below both this request's and the previous one's start are dropped (a verifier may ask
      // again from where it asked last, never from before). Benches that start a fresh verifier
      // on the same fleet (cluster-fleet's phases) ask from 0 again and keep every line.
      if (from < a.base) {
        process.stderr.write(`fleet: ${a.id} asked for entries from ${from}, but they were dropped below ${a.base}\n`)
        return json(res, 500, { code: 500, status: `entries below ${a.base} no longer kept`, results: {} })
      }
      const keepFrom = DROP_SEEN ? Math.min(from, a.lastFrom) : 0
      a.lastFrom = from
      if (keepFrom > a.base) {
        a.lines.splice(0, keepFrom - a.base)
        a.base = keepFrom
      }
      const list = a.lines.slice(from - a.base)
      json(res, 200, {
        quote: quoteOf(a, nonce),
        hash_alg: "sha256",
        enc_alg: a.enc,
        sign_alg: a.ak.scheme,
        ...(partial ? {} : { pubkey: fleetNk }),
        boottime: bootTime,
        ima_measurement_list: list.length === 0 ? "" : list.join("\n") + "\n",
        ima_measurement_list_entry: from
      })
    })
    server.on("secureConnection", () => stats.connections++)
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    out.push({ id: a.id, port: (server.address() as AddressInfo).port, ak: Buffer.from(marshalTpm2bPublic(ak.public)).toString("base64"), enc: a.enc })
  }
  process.stdout.write(JSON.stringify({ agents: out, cert: own.cert }) + "\n")
}

if (process.argv[1]?.endsWith("_fleet.ts")) void main()

/** The creation body the benches enrol a fleet agent with: the shared "fleet" policy by name, PCR 10, its pinned certificate. */
export const fleetAgentBody = (a: { readonly port: number; readonly ak: string }, mtlsCert: string) => ({
  v: null,
  cloudagent_ip: "127.0.0.1",
  cloudagent_port: a.port,
  tpm_policy: `{"mask": "0x400"}`,
  runtime_policy: "",
  runtime_policy_name: "fleet",
  runtime_policy_key: null,
  mb_policy: null,
  mb_policy_name: null,
  ima_sign_verification_keys: "",
  metadata: "{}",
  revocation_key: "",
  accept_tpm_hash_algs: ["sha256"],
  accept_tpm_encryption_algs: ["rsa", "ecc"],
  accept_tpm_signing_algs: ["rsassa", "ecdsa"],
  ak_tpm: a.ak,
  mtls_cert: mtlsCert,
  supported_version: "2.5"
})
