/**
 * Delivering a decrypted payload (rust-keylime `payloads.rs`): `<dir>/unzipped` is recreated with
 * owner-only permissions, K goes to `derived_tci_key`, the plaintext to `decrypted_payload`, a zip
 * payload is extracted there, and the payload script runs only when one is configured.
 */
import { execFile } from "node:child_process"
import { chmod, mkdir, rm, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { Effect, Either } from "effect"
import { AgentRequestError } from "./errors.js"
import { isZip, readZip } from "./zip.js"

export interface PayloadOptions {
  readonly dir: string
  readonly extractZip: boolean
  /** Script name inside the payload (Keylime `payload_script`, e.g. "autorun.sh"); unset: never run. */
  readonly script?: string | undefined
}

const io = (what: string) => (e: unknown) =>
  new AgentRequestError({ status: 500, message: `${what}: ${e instanceof Error ? e.message : String(e)}` })

const runScript = (cwd: string, script: string) =>
  Effect.async<string, AgentRequestError>((resume) => {
    const child = execFile("sh", ["-c", `./${script}`], { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) resume(Effect.fail(io(`payload script ${script} failed`)(new Error(`${error.message} ${stderr}`.trim()))))
      else resume(Effect.succeed(stdout))
    })
    return Effect.sync(() => child.kill())
  })

export const deliverPayload = Effect.fn("Agent.deliverPayload")(function*(
  options: PayloadOptions,
  k: Uint8Array,
  plaintext: Uint8Array | undefined
) {
  const unzipped = join(options.dir, "unzipped")
  yield* Effect.tryPromise({
    try: async () => {
      await mkdir(options.dir, { recursive: true, mode: 0o700 })
      await chmod(options.dir, 0o700)
      await rm(unzipped, { recursive: true, force: true })
      await mkdir(unzipped, { mode: 0o700 })
      await writeFile(join(unzipped, "derived_tci_key"), k, { mode: 0o600 })
      if (plaintext !== undefined) await writeFile(join(unzipped, "decrypted_payload"), plaintext, { mode: 0o600 })
    },
    catch: io(`writing the payload into ${unzipped}`)
  })
  if (plaintext === undefined) return { dir: unzipped, files: 1 }
  let files = 2
  if (options.extractZip && isZip(plaintext)) {
    const entries = yield* Either.match(readZip(plaintext), { onLeft: Effect.fail, onRight: Effect.succeed })
    yield* Effect.tryPromise({
      try: async () => {
        for (const e of entries) {
          const path = join(unzipped, e.name)
          await mkdir(dirname(path), { recursive: true, mode: 0o700 })
          await writeFile(path, e.data, { mode: 0o600 })
        }
      },
      catch: io("extracting the payload zip")
    })
    files += entries.length
    yield* Effect.logInfo(`payload zip extracted: ${entries.length} files in ${unzipped}`)
  }
  if (options.script !== undefined) {
    const script = options.script
    const path = join(unzipped, script)
    const present = yield* Effect.tryPromise({ try: () => chmod(path, 0o700).then(() => true, () => false), catch: io("payload script") })
    if (present) {
      yield* Effect.logInfo(`running payload script ${script} in ${unzipped}`)
      const out = yield* runScript(unzipped, script)
      yield* Effect.logInfo(`payload script ${script} finished`, out.trim())
    } else {
      yield* Effect.logInfo(`payload script ${script} not in the payload; nothing run`)
    }
  }
  return { dir: unzipped, files }
})
