/**
 * The agent's NK across restarts (issue 8, item 10): `<dataDir>/nk-private.pem` (0600), loaded at
 * start or made and stored. A verifier that holds the NK from an earlier quote (and asks for
 * partial quotes without the public key) keeps finding H(0 ‖ H(NK PEM)) in PCR 16 after a plain
 * agent restart, as with the reference agent. An unreadable or foreign file is replaced, loudly.
 */
import { existsSync } from "node:fs"
import { mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { generateNkAsync, type Nk, nkFromPrivatePem, nkPrivatePem } from "../keys/index.js"
import { AgentStateError } from "./state.js"

export const NK_FILE = "nk-private.pem"

const store = (dataDir: string, nk: Nk) => {
  const file = join(dataDir, NK_FILE)
  return Effect.tryPromise({
    try: async () => {
      await mkdir(dataDir, { recursive: true, mode: 0o700 })
      await writeFile(`${file}.tmp`, nkPrivatePem(nk), { mode: 0o600 })
      await rename(`${file}.tmp`, file)
    },
    catch: (e) => new AgentStateError({ file, message: `cannot store the NK: ${String(e)}` })
  })
}

/** The stored NK, or a new one (generated on the thread pool) written to the data directory. */
export const loadOrCreateNk = Effect.fn("Agent.nk")(function*(dataDir: string) {
  const file = join(dataDir, NK_FILE)
  if (existsSync(file)) {
    const pem = yield* Effect.tryPromise({
      try: () => readFile(file, "utf8"),
      catch: (e) => new AgentStateError({ file, message: String(e) })
    })
    const loaded = nkFromPrivatePem(pem)
    if (Either.isRight(loaded)) {
      yield* Effect.logInfo(`loaded the NK from ${file}`)
      return loaded.right
    }
    yield* Effect.logWarning(`${file} does not hold a usable NK (${loaded.left.message}); making a new one`)
  }
  const nk = yield* generateNkAsync()
  yield* store(dataDir, nk)
  yield* Effect.logInfo(`made a new NK and stored it in ${file}`)
  return nk
})
