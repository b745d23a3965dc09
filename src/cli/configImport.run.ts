/**
 * How `attest config import` runs: read the Keylime files, translate them (config/keylimeImport.ts),
 * check that the result loads with attest's own loader, write it, and list on stderr every option
 * that was not carried over and why.
 */
import { FileSystem } from "@effect/platform"
import { Console, Effect, Either, Option } from "effect"
import { resolveSection } from "../config/load.js"
import { importKeylime, KeylimeImportError, type KeylimeFile, renderImport, renderSkipped } from "../config/keylimeImport.js"
import { sectionNames } from "../config/sections.js"
import { parseToml } from "../config/toml.js"

export interface ImportArgs {
  readonly files: ReadonlyArray<string>
  readonly out: Option.Option<string>
  readonly keylimeDir: string
  readonly force: boolean
}

const fail = (file: string, message: string) => Effect.fail(new KeylimeImportError({ file, message }))

/** The written TOML must load: a translation that attest would refuse is a bug, said plainly. */
const checkLoads = (toml: string) => {
  const doc = parseToml(toml)
  if (Either.isLeft(doc)) return fail("(output)", `the imported TOML does not parse (line ${doc.left.line}: ${doc.left.message}); please report this`)
  for (const section of sectionNames) {
    const r = resolveSection(section, { env: {}, file: { path: "(imported)", doc: doc.right, text: toml } })
    if (Either.isLeft(r)) return fail("(output)", `the imported TOML does not load: ${r.left.message}; please report this`)
  }
  return Effect.void
}

export const run = (args: ImportArgs) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const files: Array<KeylimeFile> = []
    for (const path of args.files) {
      const text = yield* fs.readFileString(path).pipe(Effect.orElse(() => fail(path, `cannot read ${path}`)))
      files.push({ path, text })
    }
    const result = yield* importKeylime(files, { keylimeDir: args.keylimeDir })
    if (result.carried.length === 0) {
      return yield* fail(args.files.join(", "), "none of the files has an option attest carries over ([verifier], [registrar], [tenant], [agent])")
    }
    const toml = renderImport(result)
    yield* checkLoads(toml)
    if (Option.isSome(args.out)) {
      const out = args.out.value
      if (!args.force && (yield* fs.exists(out).pipe(Effect.orElseSucceed(() => false)))) {
        return yield* fail(out, `${out} exists; give --force to replace it`)
      }
      yield* fs.writeFileString(out, toml).pipe(Effect.orElse(() => fail(out, `cannot write ${out}`)))
    } else {
      yield* Console.log(toml.trimEnd())
    }
    const formats = result.formats.map((f) => `${f.file} (${f.format})`).join(", ")
    yield* Console.error(`attest config import: read ${formats}`)
    yield* Console.error(`attest config import: carried over ${result.carried.length} options${Option.isSome(args.out) ? ` into ${args.out.value}` : ""}`)
    if (result.skipped.length > 0) {
      yield* Console.error([`attest config import: not carried over (${result.skipped.length}):`, ...renderSkipped(result).map((l) => `  ${l}`)].join("\n"))
    }
  }).pipe(Effect.tapError((e) => Console.error(`attest config import: ${e.message}`)))
