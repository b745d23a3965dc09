/**
 * An existing Keylime installation's configuration as attest's TOML: the INI files of the
 * verifier, registrar, tenant and CA (verifier.conf, registrar.conf, tenant.conf, ca.conf and
 * their .conf.d snippets) and the Rust agent's TOML (agent.conf, also named keylime-agent.conf;
 * told apart by its content, not its name). verifier.conf's [revocations] notifier options become
 * [verifier] options, as attest has them. A Jinja2 template of Keylime's source tree is refused
 * with what to give instead. Files are applied in the
 * order given, a later value overriding an earlier one, as Keylime applies its snippets. Every
 * option is either carried over (decoded by attest's own option table, so the result loads) or
 * reported with the reason it is not: unknown to attest, not applicable, or a value attest does not
 * support. Pure: the caller reads the files and writes the result.
 */
import { Either, Schema } from "effect"
import { parseIni } from "./ini.js"
import { anySection, bySection, keylimeDefaults, otherSections, type Rule, type SkipKind } from "./keylimeOptions.js"
import { type OptionSpec, reasonOf, type SectionSpec } from "./option.js"
import { type SectionName, sectionNames, sections } from "./sections.js"
import { isTable, lineOf, parseToml, type TomlValue } from "./toml.js"

export interface KeylimeFile {
  readonly path: string
  readonly text: string
}

export interface ImportOptions {
  /** Keylime's working directory (its KEYLIME_DIR): default of the CA directory and relative paths. */
  readonly keylimeDir: string
}

/** Where a value came from: a line of a file, or Keylime's default. */
export interface Source {
  readonly file?: string
  readonly line?: number
  /** The Keylime option, when it is not the attest option's name. */
  readonly keylimeOption?: string
  readonly note?: string
}

export interface Carried {
  readonly section: SectionName
  readonly option: string
  /** The value as attest's table encodes it (what the TOML file holds). */
  readonly value: TomlValue
  readonly source: Source
}

export interface Skipped {
  readonly file: string
  readonly line?: number
  readonly section: string
  readonly option: string
  readonly kind: SkipKind
  readonly reason: string
}

export interface ImportResult {
  readonly formats: ReadonlyArray<{ readonly file: string; readonly format: "INI" | "TOML" }>
  readonly carried: ReadonlyArray<Carried>
  readonly skipped: ReadonlyArray<Skipped>
}

export class KeylimeImportError extends Schema.TaggedError<KeylimeImportError>()("KeylimeImportError", {
  file: Schema.String,
  message: Schema.String
}) {}

interface Entry {
  readonly file: string
  readonly line: number | undefined
  readonly section: string
  readonly option: string
  readonly value: TomlValue
}

/**
 * One file's options. The Rust agent's files (an `[agent]` table) are TOML; every other Keylime
 * file is INI, read as Python's configparser reads it, with values stripped of `"` and spaces at
 * both ends as Keylime's config.get does. (A snippet such as `[verifier]\nquote_interval = 5` is
 * valid TOML too, but Keylime reads it as INI, and so does the import.)
 */
const readFile = (f: KeylimeFile): Either.Either<{ format: "INI" | "TOML"; entries: Array<Entry> }, KeylimeImportError> => {
  const template = jinjaLine(f.text)
  if (template !== undefined) {
    return Either.left(new KeylimeImportError({
      file: f.path,
      message: `${f.path}:${template} is a Jinja2 template (Keylime's source tree, templates/): attest reads the files Keylime installs from them. ` +
        `Give the installed file (/etc/keylime/verifier.conf, registrar.conf, tenant.conf, ca.conf, agent.conf), ` +
        `or render the templates first with Keylime's keylime_upgrade_config, which writes those files`
    }))
  }
  const toml = parseToml(f.text)
  if (Either.isRight(toml) && toml.right["agent"] !== undefined) {
    const entries: Array<Entry> = []
    for (const [section, table] of Object.entries(toml.right)) {
      for (const [option, value] of Object.entries(table)) {
        entries.push({ file: f.path, line: lineOf(f.text, section, option), section: section === "" ? "(top level)" : section, option, value })
      }
    }
    return Either.right({ format: "TOML", entries })
  }
  const ini = parseIni(f.text)
  if (Either.isLeft(ini)) {
    const asToml = Either.isLeft(toml) ? `TOML (line ${toml.left.line}: ${toml.left.message})` : "the agent's TOML (no [agent] table)"
    return Either.left(new KeylimeImportError({
      file: f.path,
      message: `${f.path} is neither a Keylime INI file (line ${ini.left.line}: ${ini.left.message}) nor ${asToml}`
    }))
  }
  const entries: Array<Entry> = []
  for (const [section, options] of ini.right) {
    for (const [option, v] of options) entries.push({ file: f.path, line: v.line, section, option, value: v.value.replace(/^[" ]+|[" ]+$/g, "") })
  }
  return Either.right({ format: "INI", entries })
}

/** The first line holding Jinja2 syntax (`{{ … }}`, `{% … %}`) outside a comment, when there is one. */
const jinjaLine = (text: string): number | undefined => {
  const lines = text.split("\n")
  const i = lines.findIndex((l) => !/^\s*[#;]/.test(l) && /\{\{.*\}\}|\{%.*%\}/.test(l))
  return i === -1 ? undefined : i + 1
}

/** Keylime keeps the revocation notifiers' options in verifier.conf's [revocations]; attest's are [verifier] options. */
const IN_VERIFIER = new Set(["enabled_revocation_notifications", "webhook_url"])

const isSectionName = (s: string): s is SectionName => (sectionNames as ReadonlyArray<string>).includes(s)

const where = (e: { readonly file: string; readonly line: number | undefined }) => (e.line === undefined ? e.file : `${e.file}:${e.line}`)

export const importKeylime = (files: ReadonlyArray<KeylimeFile>, options: ImportOptions): Either.Either<ImportResult, KeylimeImportError> => {
  const formats: Array<ImportResult["formats"][number]> = []
  const skipped: Array<Skipped> = []
  const skip = (e: Entry, kind: SkipKind, reason: string) =>
    skipped.push({ file: e.file, ...(e.line === undefined ? {} : { line: e.line }), section: e.section, option: e.option, kind, reason })

  // later files override earlier ones, option by option
  const latest = new Map<string, Entry>()
  for (const f of files) {
    const read = readFile(f)
    if (Either.isLeft(read)) return Either.left(read.left)
    formats.push({ file: f.path, format: read.right.format })
    for (const e of read.right.entries) {
      const key = `${e.section}\u0000${e.option}`
      const earlier = latest.get(key)
      if (earlier !== undefined) skip(earlier, "not applicable", `overridden by ${where(e)}`)
      latest.set(key, e)
    }
  }

  // the agent's own keylime_dir is the base of its relative paths
  const agentDir = latest.get(`agent\u0000keylime_dir`)?.value
  const dirFor = (section: string) => ({ keylimeDir: section === "agent" && typeof agentDir === "string" && agentDir !== "" ? agentDir : options.keylimeDir })

  const carried = new Map<string, Carried>()
  for (const read of latest.values()) {
    const e = read.section === "revocations" && IN_VERIFIER.has(read.option) ? { ...read, section: "verifier", from: "[revocations]" } : read
    const other = otherSections(e.section)
    if (other !== undefined) {
      skip(e, other.kind, other.reason)
      continue
    }
    const rule: Rule | undefined = bySection[e.section]?.[e.option] ?? anySection[e.option]
    if (!isSectionName(e.section)) {
      // a rule may still say why (ca.conf's options, `version`); otherwise the section is unknown
      const outcome = rule?.(e.value, e.option, dirFor(e.section))
      if (outcome !== undefined && "skip" in outcome) skip(e, outcome.skip.kind, outcome.skip.reason)
      else if (e.section === "(top level)") skip(e, "unknown to attest", "options belong in a [section]")
      else skip(e, "unknown to attest", `attest has no [${e.section}] section`)
      continue
    }
    const spec = sections[e.section] as SectionSpec
    const outcome = rule === undefined ? { carry: { option: e.option, value: e.value } } : rule(e.value, e.option, dirFor(e.section))
    if ("skip" in outcome) {
      skip(e, outcome.skip.kind, outcome.skip.reason)
      continue
    }
    const target = outcome.carry.option
    const opt = spec[target] as OptionSpec<unknown> | undefined
    if (opt === undefined) {
      skip(e, "unknown to attest", isTable(e.value) ? `a table; attest's [${e.section}] has no option ${e.option}` : `attest's [${e.section}] has no option ${target}`)
      continue
    }
    const decoded = Schema.decodeUnknownEither(opt.schema)(outcome.carry.value)
    if (Either.isLeft(decoded)) {
      skip(e, "value not supported", reasonOf(decoded.left))
      continue
    }
    const first = carried.get(`${e.section}\u0000${target}`)
    if (first !== undefined) {
      skip(e, "not applicable", `attest's ${target} is already set from ${first.source.file}:${first.source.line} (${first.source.keylimeOption ?? target})`)
      continue
    }
    const note = outcome.carry.note
    carried.set(`${e.section}\u0000${target}`, {
      section: e.section,
      option: target,
      value: Either.getOrThrow(Schema.encodeEither(opt.schema)(decoded.right)),
      source: {
        file: e.file,
        ...(e.line === undefined ? {} : { line: e.line }),
        ...(target === e.option && !("from" in e) ? {} : { keylimeOption: "from" in e ? `${e.from} ${e.option}` : e.option }),
        ...(note === undefined ? {} : { note })
      }
    })
  }

  // Keylime's defaults where they differ from attest's: the existing CA and TPM certificate store
  const tenantStore = carried.get(`tenant\u0000ek_ca_dir`)?.value
  for (const section of new Set([...carried.values()].map((c) => c.section))) {
    const defaults = keylimeDefaults(dirFor(section).keylimeDir, typeof tenantStore === "string" ? tenantStore : undefined)
    for (const [option, d] of Object.entries(defaults)) {
      const key = `${section}\u0000${option}`
      if (carried.has(key) || !Object.hasOwn(sections[section], option)) continue
      carried.set(key, { section, option, value: d.value, source: { note: d.note } })
    }
  }

  // attest's section order, then each table's option order
  const ordered = sectionNames.flatMap((s) =>
    Object.keys(sections[s]).flatMap((o) => {
      const c = carried.get(`${s}\u0000${o}`)
      return c === undefined ? [] : [c]
    })
  )
  return Either.right({ formats, carried: ordered, skipped })
}

const renderValue = (v: TomlValue): string =>
  Array.isArray(v)
    ? `[${v.map(renderValue).join(", ")}]`
    : typeof v === "string"
    ? JSON.stringify(v) // a JSON string is a TOML basic string
    : String(v)

const describe = (s: Source): string =>
  [
    s.file === undefined ? undefined : `${s.file}${s.line === undefined ? "" : `:${s.line}`}`,
    s.keylimeOption === undefined ? undefined : `(${s.keylimeOption})`,
    s.note
  ].filter((x) => x !== undefined).join(" ")

/** attest's TOML for the carried options, each line commented with where its value came from. */
export const renderImport = (r: ImportResult): string => {
  const out = [
    "# attest configuration imported from Keylime by `attest config import`",
    ...r.formats.map((f) => `#   ${f.file} (${f.format})`)
  ]
  for (const section of sectionNames) {
    const rows = r.carried.filter((c) => c.section === section)
    if (rows.length === 0) continue
    const lines = rows.map((c) => ({ text: `${c.option} = ${renderValue(c.value)}`, note: describe(c.source) }))
    const width = Math.max(...lines.map((l) => l.text.length))
    out.push("", `[${section}]`, ...lines.map((l) => `${l.text.padEnd(width)}  # ${l.note}`))
  }
  return out.join("\n") + "\n"
}

/** One line per option not carried over: `file:line [section] option: kind: reason`. */
export const renderSkipped = (r: ImportResult): ReadonlyArray<string> =>
  r.skipped.map((s) => `${s.file}${s.line === undefined ? "" : `:${s.line}`} [${s.section}] ${s.option}: ${s.kind}: ${s.reason}`)
