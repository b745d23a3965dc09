/**
 * An append-only IMA ascii list kept as an array of lines, so serving "from entry n" costs only the
 * lines returned whatever the list length (the agent's hot path under incremental polling; a
 * growing concatenated string would be re-flattened by V8 on every slice).
 */
import type { ImaSlice } from "./MeasurementSource.js"

export class ImaLines {
  private readonly lines: Array<string> = []
  /** Characters of the source file indexed so far (SystemMeasurements re-reads a growing file). */
  private indexed = 0
  private tail = ""

  get length(): number {
    return this.lines.length
  }

  /** Appends one line (without its newline). */
  push(line: string): void {
    this.lines.push(line)
  }

  /**
   * Indexes a newer read of the same file (securityfs lists only grow): only the new complete lines
   * are added. A file that no longer starts with what was indexed is re-indexed from scratch.
   */
  refresh(content: string): void {
    if (content.length < this.indexed || !content.startsWith(this.tail, this.indexed - this.tail.length)) {
      this.lines.length = 0
      this.indexed = 0
      this.tail = ""
    }
    let lineStart = this.indexed
    for (let i = this.indexed; i < content.length; i++) {
      if (content.charCodeAt(i) === 10) {
        this.lines.push(content.slice(lineStart, i))
        lineStart = i + 1
      }
    }
    // a half-written last line waits for the next read
    this.indexed = lineStart
    this.tail = content.slice(Math.max(0, lineStart - 256), lineStart)
  }

  /** Keylime `MeasurementList::read` semantics for `ima_ml_entry`. */
  slice(fromEntry: number): ImaSlice {
    const n = this.lines.length
    if (fromEntry === n) return { entry: n, list: "" }
    const entry = fromEntry > n || fromEntry < 0 ? 0 : fromEntry
    if (n === 0) return { entry, list: "" }
    let list = ""
    for (let i = entry; i < n; i++) list += this.lines[i] + "\n"
    return { entry, list }
  }
}
