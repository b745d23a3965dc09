/**
 * What the agent keeps across restarts in `<dataDir>/agent.json` (0600): its id and its AK
 * (public area and the layer's opaque private blob), so a restart quotes with the AK the
 * registrar already holds. Bootstrap keys are never written here.
 */
import { existsSync } from "node:fs"
import { mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Data, Effect, Option, Schema } from "effect"
import type { SavedAk } from "../tpm/Tpm.js"

export class AgentStateError extends Data.TaggedError("AgentStateError")<{ readonly file: string; readonly message: string }> {}

const Bytes = Schema.Uint8ArrayFromBase64
const HashAlgS = Schema.Literal("sha1", "sha256", "sha384", "sha512")
const KeyAlgS = Schema.Literal("rsa", "ecc")
const AkOptionsS = Schema.Struct({
  alg: KeyAlgS,
  bits: Schema.optionalWith(Schema.Int, { exact: true }),
  hash: HashAlgS,
  scheme: Schema.Literal("rsassa", "rsapss", "ecdsa")
})

export const AgentStateFile = Schema.Struct({
  version: Schema.Literal(1),
  agent_id: Schema.String,
  ak: Schema.Struct({ ekAlg: KeyAlgS, options: AkOptionsS, public: Bytes, private: Bytes })
})
export type AgentStateFile = typeof AgentStateFile.Type

export const STATE_FILE = "agent.json"

export const loadState = (dataDir: string): Effect.Effect<Option.Option<AgentStateFile>, AgentStateError> => {
  const file = join(dataDir, STATE_FILE)
  if (!existsSync(file)) return Effect.succeed(Option.none())
  return Effect.tryPromise({
    try: () => readFile(file, "utf8"),
    catch: (e) => new AgentStateError({ file, message: String(e) })
  }).pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.parseJson(AgentStateFile))),
    Effect.mapError((e) => new AgentStateError({ file, message: e.message })),
    Effect.map(Option.some)
  )
}

export const saveState = (dataDir: string, agentId: string, ak: SavedAk): Effect.Effect<void, AgentStateError> => {
  const file = join(dataDir, STATE_FILE)
  return Schema.encode(Schema.parseJson(AgentStateFile, { space: 2 }))({ version: 1, agent_id: agentId, ak }).pipe(
    Effect.mapError((e) => new AgentStateError({ file, message: e.message })),
    Effect.flatMap((text) =>
      Effect.tryPromise({
        try: async () => {
          await mkdir(dataDir, { recursive: true, mode: 0o700 })
          await writeFile(`${file}.tmp`, text, { mode: 0o600 })
          await rename(`${file}.tmp`, file)
        },
        catch: (e) => new AgentStateError({ file, message: String(e) })
      })
    )
  )
}
