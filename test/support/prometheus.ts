/**
 * A strict reader of the Prometheus text format 0.0.4 for tests: every line must be a comment
 * (`# HELP`, `# TYPE`) or a sample `name{label="value",…} number`, every family has HELP and TYPE
 * before its samples, label values are unescaped. Throws naming the line when something is off.
 */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly help: string
  readonly type: string
  readonly samples: Array<Sample>
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*"
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`)
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)/y

const unescapeValue = (v: string) => v.replace(/\\(\\|"|n)/g, (_, c: string) => (c === "n" ? "\n" : c))
const unescapeHelp = (v: string) => v.replace(/\\(\\|n)/g, (_, c: string) => (c === "n" ? "\n" : c))

const parseNumber = (text: string, line: string): number => {
  if (text === "+Inf") return Number.POSITIVE_INFINITY
  if (text === "-Inf") return Number.NEGATIVE_INFINITY
  if (text === "NaN") return Number.NaN
  const n = Number(text)
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text) || Number.isNaN(n)) throw new Error(`not a number in: ${line}`)
  return n
}

/** The family a sample belongs to: histogram and summary samples carry suffixes. */
const familyOf = (families: Map<string, Family>, name: string): string | undefined => {
  if (families.has(name)) return name
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (name.endsWith(suffix) && families.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length)
  }
  return undefined
}

export const parseExposition = (text: string): Map<string, Family> => {
  if (text !== "" && !text.endsWith("\n")) throw new Error("the exposition must end with a newline")
  const families = new Map<string, Family>()
  let pendingHelp: { name: string; help: string } | undefined
  for (const line of text.split("\n").slice(0, -1)) {
    const help = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line)
    if (help) {
      pendingHelp = { name: help[1]!, help: unescapeHelp(help[2]!) }
      continue
    }
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line)
    if (type) {
      if (pendingHelp?.name !== type[1]) throw new Error(`TYPE without its HELP: ${line}`)
      if (families.has(type[1]!)) throw new Error(`family given twice: ${line}`)
      families.set(type[1]!, { help: pendingHelp.help, type: type[2]!, samples: [] })
      pendingHelp = undefined
      continue
    }
    const sample = SAMPLE.exec(line)
    if (!sample) throw new Error(`not a sample: ${line}`)
    const labels: Record<string, string> = {}
    const body = sample[2] ?? ""
    LABEL.lastIndex = 0
    while (LABEL.lastIndex < body.length) {
      const at = LABEL.lastIndex
      const m = LABEL.exec(body)
      if (!m || m.index !== at) throw new Error(`bad labels in: ${line}`)
      labels[m[1]!] = unescapeValue(m[2]!)
    }
    const family = familyOf(families, sample[1]!)
    if (family === undefined) throw new Error(`sample before its family's HELP/TYPE: ${line}`)
    families.get(family)!.samples.push({ name: sample[1]!, labels, value: parseNumber(sample[3]!, line) })
  }
  return families
}

/** The value of the one sample with exactly these labels (undefined when absent). */
export const valueOf = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined => {
  const family = families.get(familyOf(families, name) ?? name)
  const want = JSON.stringify(Object.entries(labels).sort())
  return family?.samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value
}
