/**
 * `attest … --help` as plain text: what the command does, its usage line, its options (each with
 * the value it takes and its description, wrapped to the width) or its subcommands. No ANSI
 * colours and no padding to the widest usage line (the help of @effect/cli, replaced here, printed
 * both, and doubled group names in nested usage lines). Pure.
 */
import type { CommandInfo, OptionInfo } from "./commandTree.js"

/** Help is wrapped to the terminal's width, or 100 columns when it is not a terminal. */
export const helpWidth = (): number =>
  Math.max(60, Math.min(120, process.stdout.isTTY === true ? (process.stdout.columns ?? 100) - 1 : 100))

/** Words of `text` in lines of at most `width` characters, each starting with `indent`. */
export const wrap = (text: string, width: number, indent: string): ReadonlyArray<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w.length > 0)) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line)
      line = word
    } else {
      line = line === "" ? word : `${line} ${word}`
    }
  }
  if (line !== "") lines.push(indent + line)
  return lines
}

const optionHead = (o: OptionInfo): string => {
  const [main, ...aliases] = o.names
  // -e, --eventlog; --push, --push-model
  const names = [...aliases.filter((a) => !a.startsWith("--")), main, ...aliases.filter((a) => a.startsWith("--"))].join(", ")
  return o.value === null ? names : `${names} <${o.value}>`
}

const optionNotes = (o: OptionInfo): string => {
  // what the description already says is not said again
  const says = (word: string) => o.description.toLowerCase().includes(word)
  const notes = [
    ...(o.repeated && !says("repeat") ? ["repeatable"] : []),
    ...(o.defaultValue !== null ? (says("default") ? [] : [`default ${o.defaultValue}`]) : !o.optional ? ["required"] : [])
  ]
  return notes.length === 0 ? "" : ` (${notes.join("; ")})`
}

const usageLine = (c: CommandInfo): string => {
  const required = c.options.filter((o) => !o.optional).map((o) => (o.value === null ? o.names[0]! : `${o.names[0]} <${o.value}>`))
  const hasOptional = c.options.some((o) => o.optional)
  // a group with options of its own also runs alone (argv.ts): its command is optional
  const command = c.children.length === 0 ? [] : c.options.length > 0 ? ["[<command>]"] : ["<command>"]
  return [c.path.join(" "), ...command, ...required, ...(hasOptional ? ["[options]"] : []), ...c.args].join(" ")
}

/** The help of one command, at most `width` characters a line (where words allow). */
export const renderHelp = (c: CommandInfo, width: number, version?: string): string => {
  const out: Array<string> = []
  const title = c.path.join(" ")
  out.push(...wrap(`${title}${version === undefined ? "" : ` ${version}`}: ${c.description}`, width, ""))
  out.push("", `Usage: ${usageLine(c)}`)
  if (c.children.length > 0) {
    out.push("", "Commands:")
    // a nested group's commands by their path below this one ("create runtime")
    const leaves = (k: CommandInfo): ReadonlyArray<CommandInfo> => (k.children.length === 0 ? [k] : k.children.flatMap(leaves))
    const rows = c.children.flatMap(leaves).map((k) => ({ name: k.path.slice(c.path.length).join(" "), description: k.description }))
    const nameWidth = Math.min(24, Math.max(...rows.map((k) => k.name.length)))
    for (const k of rows) {
      const head = `  ${k.name.padEnd(nameWidth)}  `
      const body = wrap(k.description, width, " ".repeat(head.length))
      out.push(head + (body[0]?.trimStart() ?? ""), ...body.slice(1))
    }
    out.push("", `'${title} <command> --help' shows a command's options.`)
  }
  const options = c.options
  if (options.length > 0) {
    out.push("", "Options:")
    for (const o of options) {
      out.push(`  ${optionHead(o)}`)
      out.push(...wrap(`${o.description}${optionNotes(o)}`, width, "      "))
    }
  }
  out.push("", c.path.length === 1 ? "  -h, --help  this help;  --version  the version" : "  -h, --help  this help")
  return out.join("\n")
}

/** Commands whose names are nearest to a typo (edit distance at most 2, or sharing its start). */
export const nearest = (typo: string, names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const distance = (a: string, b: string) => {
    const d = Array.from({ length: b.length + 1 }, (_, j) => j)
    for (let i = 1; i <= a.length; i++) {
      let prev = d[0]!
      d[0] = i
      for (let j = 1; j <= b.length; j++) {
        const here = d[j]!
        d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
        prev = here
      }
    }
    return d[b.length]!
  }
  return names.filter((n) => distance(typo, n) <= 2 || (typo.length >= 3 && n.startsWith(typo)))
}
