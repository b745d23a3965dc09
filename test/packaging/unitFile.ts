/** Reading the generated unit files back in tests. */

/** A unit file's sections: key → every value it is given, in order (comments and blanks dropped). */
export const parseUnit = (text: string): Record<string, Record<string, Array<string>>> => {
  const out: Record<string, Record<string, Array<string>>> = {}
  let current: Record<string, Array<string>> | undefined
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue
    const header = /^\[(\w+)\]$/.exec(line)
    if (header) {
      current = out[header[1]!] = {}
      continue
    }
    const eq = line.indexOf("=")
    if (current === undefined || eq < 0) throw new Error(`not a unit file line: ${line}`)
    const key = line.slice(0, eq)
    ;(current[key] ??= []).push(line.slice(eq + 1))
  }
  return out
}
