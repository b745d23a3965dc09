/**
 * A private swtpm for one test suite: manufactured offline with `swtpm_setup` (EK certificates from
 * its own local CA in a temp dir), a P-256 EK certificate written to NV 0x1c0000a (swtpm 0.7.1 only
 * provisions a P-384 one at 0x1c00016), swtpm in socket mode on free loopback ports, powered on with
 * `swtpm_ioctl -i` and started with `tpm2_startup -c`. Stopping kills the process and removes the dir.
 *
 * Use `SwtpmHarness.layer` with `layer(...)` from @effect/vitest, or `startSwtpm()` / `stop()` directly.
 * Start one per suite: manufacturing takes about a second.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createPublicKey, X509Certificate } from "node:crypto"
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"

export interface Swtpm {
  /** TCTI string for tpm2-tools / the Tpm2Tools layer. */
  readonly tcti: string
  readonly port: number
  readonly ctrlPort: number
  readonly stateDir: string
  /** Root of the local CA that signed the EK certificates (PEM), what a registrar would trust. */
  readonly rootCaPem: string
  /** The intermediate that signs the EK certificates (PEM). */
  readonly issuerCaPem: string
  /** Runs a tpm2-tools command against this swtpm; resolves with stdout (rejects with stderr). */
  readonly tool: (tool: string, args: ReadonlyArray<string>, cwd?: string) => Promise<Buffer>
  /** TPM Reset: power cycle + startup (PCRs back to zero, resetCount + 1). */
  readonly reset: () => Promise<void>
  readonly stop: () => Promise<void>
}

const probePort = (port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A free loopback port (bind port 0, read it, close). */
export const freePort = (): Promise<number> => probePort(0)

/** A free port P with P+1 also free: the swtpm TCTI always talks to the control channel on port + 1. */
export const freePortPair = async (): Promise<number> => {
  for (let i = 0; i < 20; i++) {
    const port = await freePort()
    if (port >= 65535) continue
    const ok = await probePort(port + 1).then(() => true, () => false)
    if (ok) return port
  }
  throw new Error("no two adjacent free loopback ports")
}

const run = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string; readonly timeoutMs?: number } = {}
): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const timeout = options.timeoutMs ?? 30_000
    execFile(
      file,
      [...args],
      { encoding: "buffer", env: { ...process.env, ...options.env }, cwd: options.cwd, timeout },
      (error, stdout, stderr) => {
        const why = error?.killed === true ? `killed after ${timeout} ms` : stderr.toString() || error?.message
        if (error) reject(new Error(`${file} ${args.join(" ")} failed: ${why}`))
        else resolve(stdout)
      }
    )
  })

const waitForPort = async (port: number, attempts = 100): Promise<void> => {
  for (let i = 0; i < attempts; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port })
      socket.once("connect", () => {
        socket.destroy()
        resolve(true)
      })
      socket.once("error", () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`swtpm did not listen on 127.0.0.1:${port}`)
}

const manufacture = async (dir: string): Promise<void> => {
  const localca = join(dir, "localca")
  const localcaConf = join(dir, "swtpm-localca.conf")
  const setupConf = join(dir, "swtpm_setup.conf")
  await run("mkdir", ["-p", join(dir, "tpm"), localca])
  writeFileSync(
    localcaConf,
    [
      `statedir = ${localca}`,
      `signingkey = ${localca}/signkey.pem`,
      `issuercert = ${localca}/issuercert.pem`,
      `certserial = ${localca}/certserial`,
      ""
    ].join("\n")
  )
  writeFileSync(
    setupConf,
    [
      "create_certs_tool= /usr/bin/swtpm_localca",
      `create_certs_tool_config = ${localcaConf}`,
      "create_certs_tool_options = /etc/swtpm-localca.options",
      "active_pcr_banks = sha1,sha256",
      ""
    ].join("\n")
  )
  await run("swtpm_setup", [
    "--tpm2",
    "--tpmstate",
    join(dir, "tpm"),
    "--create-ek-cert",
    "--create-platform-cert",
    "--ecc",
    "--config",
    setupConf,
    "--pcr-banks",
    "sha1,sha256"
    // it makes RSA and ECC keys and certificates: over 30 s on a loaded 2-core machine
  ], { timeoutMs: 120_000 })
}

/** Writes a P-256 EK certificate from the same local CA to NV 0x1c0000a (tpm-facts.md §1.3). */
const provisionP256EkCert = async (swtpm: Swtpm): Promise<void> => {
  const dir = swtpm.stateDir
  await swtpm.tool("tpm2_createek", ["-c", "ek_ecc.ctx", "-G", "ecc", "-u", "ek_ecc.pem", "-f", "pem"], dir)
  await swtpm.tool("tpm2_flushcontext", ["-t"], dir)
  const jwk = createPublicKey(readFileSync(join(dir, "ek_ecc.pem"))).export({ format: "jwk" })
  const hex = (b64url: string | undefined) => Buffer.from(b64url ?? "", "base64url").toString("hex").padStart(64, "0")
  const certs = join(dir, "p256cert")
  await run("mkdir", ["-p", certs])
  await run("swtpm_localca", [
    "--type",
    "ek",
    "--ek",
    `x=${hex(jwk.x)},y=${hex(jwk.y)},id=secp256r1`,
    "--dir",
    certs,
    "--tpm-spec-family",
    "2.0",
    "--tpm-spec-level",
    "0",
    "--tpm-spec-revision",
    "164",
    "--tpm-manufacturer",
    "id:00001014",
    "--tpm-model",
    "swtpm",
    "--tpm-version",
    "id:20191023",
    "--tpm2",
    "--configfile",
    join(dir, "swtpm-localca.conf"),
    "--optsfile",
    "/etc/swtpm-localca.options"
  ])
  const cert = join(certs, "ek.cert")
  const size = String(statSync(cert).size)
  await swtpm.tool("tpm2_nvdefine", [
    "0x1c0000a",
    "-C",
    "p",
    "-s",
    size,
    "-a",
    "ppwrite|ppread|ownerread|authread|no_da|writedefine|platformcreate"
  ])
  await swtpm.tool("tpm2_nvwrite", ["0x1c0000a", "-C", "p", "-i", cert])
  await swtpm.tool("tpm2_nvwritelock", ["0x1c0000a", "-C", "p"])
}

export interface SwtpmOptions {
  /** Also provision a P-256 EK certificate at NV 0x1c0000a (default true; ignored with `fromState`). */
  readonly p256EkCert?: boolean
  /**
   * Start from a recorded swtpm state directory (copied, never written) instead of manufacturing a
   * new TPM: no local CA then, so `rootCaPem` and `issuerCaPem` are empty.
   */
  readonly fromState?: string
}

export const startSwtpm = async (options: SwtpmOptions = {}): Promise<Swtpm> => {
  const dir = mkdtempSync(join(tmpdir(), "attest-swtpm-"))
  let child: ChildProcess | undefined
  const stop = async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r))
      child.kill("SIGTERM")
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))])
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    if (options.fromState === undefined) await manufacture(dir)
    else cpSync(options.fromState, join(dir, "tpm"), { recursive: true })
    // Ports are probed then released; a rare collision with another suite makes swtpm exit, so retry.
    for (let attempt = 0; ; attempt++) {
      const port = await freePortPair()
      const ctrlPort = port + 1
      const proc = spawn(
        "swtpm",
        [
          "socket",
          "--tpm2",
          "--tpmstate",
          `dir=${join(dir, "tpm")}`,
          "--server",
          `type=tcp,port=${port},bindaddr=127.0.0.1`,
          "--ctrl",
          `type=tcp,port=${ctrlPort},bindaddr=127.0.0.1`,
          "--log",
          `file=${join(dir, "swtpm.log")},level=1`
        ],
        { stdio: "ignore" }
      )
      child = proc
      try {
        await waitForPort(port)
        await waitForPort(ctrlPort)
      } catch (error) {
        if (attempt < 3 && proc.exitCode !== null) continue
        throw error
      }
      const tcti = `swtpm:host=127.0.0.1,port=${port}`
      const tool = (name: string, args: ReadonlyArray<string>, cwd?: string) =>
        run(name, args, { env: { TPM2TOOLS_TCTI: tcti }, cwd: cwd ?? dir })
      const powerOn = async () => {
        await run("swtpm_ioctl", ["--tcp", `127.0.0.1:${ctrlPort}`, "-i"])
        await tool("tpm2_startup", ["-c"])
      }
      await powerOn()
      const swtpm: Swtpm = {
        tcti,
        port,
        ctrlPort,
        stateDir: dir,
        rootCaPem: options.fromState === undefined ? readFileSync(join(dir, "localca", "swtpm-localca-rootca-cert.pem"), "utf8") : "",
        issuerCaPem: options.fromState === undefined ? readFileSync(join(dir, "localca", "issuercert.pem"), "utf8") : "",
        tool,
        reset: powerOn,
        stop
      }
      if (options.p256EkCert !== false && options.fromState === undefined) await provisionP256EkCert(swtpm)
      return swtpm
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/** The running swtpm of a suite, for tests that need its TCTI or CA. */
export class SwtpmHarness extends Context.Tag("attest/test/SwtpmHarness")<SwtpmHarness, Swtpm>() {
  static readonly layer = (options: SwtpmOptions = {}): Layer.Layer<SwtpmHarness, Error> =>
    Layer.scoped(
      SwtpmHarness,
      Effect.acquireRelease(
        Effect.tryPromise({
          try: () => startSwtpm(options),
          catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
        }),
        (swtpm) => Effect.promise(() => swtpm.stop())
      )
    )
}

/**
 * swtpm's own manufacturer CAs as an EK trust store: written into `<root>/tpm_cert_store` (for a
 * tenant's or verifier's `ek_ca_dir`) and as anchors (for a registrar in the test process).
 */
export const swtpmEkTrust = (swtpm: Pick<Swtpm, "rootCaPem" | "issuerCaPem">, root: string) => {
  const ekCaDir = join(root, "tpm_cert_store")
  mkdirSync(ekCaDir, { recursive: true })
  writeFileSync(join(ekCaDir, "swtpm-root.pem"), swtpm.rootCaPem)
  writeFileSync(join(ekCaDir, "swtpm-issuer.pem"), swtpm.issuerCaPem)
  const anchors = [new X509Certificate(swtpm.rootCaPem), new X509Certificate(swtpm.issuerCaPem)]
  return { ekCaDir, anchors }
}
