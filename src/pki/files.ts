/** Small file helpers for CA material: never overwrite, private keys 0600, directories 0700. */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Schema } from "effect"

/** A CA or TLS file operation failed; crosses to the CLI, so it names the file. */
export class CaError extends Schema.TaggedError<CaError>()("CaError", {
  message: Schema.String,
  file: Schema.optional(Schema.String)
}) {}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

export const exists = (file: string): Effect.Effect<boolean> => Effect.sync(() => fs.existsSync(file))

/**
 * Creates `dir` (and parents) with mode 0700 (exactly, whatever the umask). An existing directory
 * keeps its mode: an operator may point --dir at a directory they manage themselves.
 */
export const ensurePrivateDir = (dir: string): Effect.Effect<void, CaError> =>
  Effect.try({
    try: () => {
      if (fs.existsSync(dir)) return
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      fs.chmodSync(dir, 0o700)
    },
    catch: (cause) => new CaError({ message: `cannot create directory ${dir}: ${describe(cause)}`, file: dir })
  })

/** Writes a new file; fails if it exists (flag "wx"), so a CA or key is never overwritten. */
export const writeNew = (file: string, content: string, mode: 0o600 | 0o644): Effect.Effect<void, CaError> =>
  Effect.try({
    try: () => {
      fs.writeFileSync(file, content, { flag: "wx", mode })
      fs.chmodSync(file, mode) // the umask may have narrowed or (for 0644) kept it; be exact
    },
    catch: (cause) =>
      new CaError({
        message: (cause as NodeJS.ErrnoException)?.code === "EEXIST"
          ? `${file} already exists; refusing to overwrite it`
          : `cannot write ${file}: ${describe(cause)}`,
        file
      })
  })

export const readText = (file: string): Effect.Effect<string, CaError> =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (cause) => new CaError({ message: `cannot read ${file}: ${describe(cause)}`, file })
  })

export const listFiles = (dir: string): Effect.Effect<ReadonlyArray<string>, CaError> =>
  Effect.try({
    try: () => fs.readdirSync(dir).sort().map((n) => path.join(dir, n)).filter((f) => fs.statSync(f).isFile()),
    catch: (cause) => new CaError({ message: `cannot list ${dir}: ${describe(cause)}`, file: dir })
  })

/**
 * Replaces `file` atomically: writes a temporary file next to it, sets `mode`, renames it over
 * the old one, so a reader (a server starting) sees the old or the new content, never half.
 */
export const writeAtomic = (file: string, content: string | Uint8Array, mode: 0o600 | 0o644): Effect.Effect<void, CaError> =>
  Effect.try({
    try: () => {
      const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`)
      try {
        fs.writeFileSync(tmp, content, { flag: "wx", mode })
        fs.chmodSync(tmp, mode)
        fs.renameSync(tmp, file)
      } catch (e) {
        fs.rmSync(tmp, { force: true })
        throw e
      }
    },
    catch: (cause) => new CaError({ message: `cannot write ${file}: ${describe(cause)}`, file })
  })

export const readBytes = (file: string): Effect.Effect<Uint8Array, CaError> =>
  Effect.try({
    try: () => new Uint8Array(fs.readFileSync(file)),
    catch: (cause) => new CaError({ message: `cannot read ${file}: ${describe(cause)}`, file })
  })
