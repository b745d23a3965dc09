/**
 * An append-only IMA ascii list kept as line start offsets over growing text, so serving "from
 * entry n" is one slice whatever the list length (the agent's hot path under incremental polling).
 */
import type { ImaSlice } from "./MeasurementSource.js"

export class ImaLines {
  private text = ""
  /** Byte (UTF-16 unit) offset where each complete line starts. */
  private readonly starts: Array<number> = []

  get length(): number {
    return this.starts.length
  }

  /** Appends one line (without its newline). */
  push(line: string): void {
    this.starts.push(this.text.length)
    this.text += line + "\n"
  }

  /**
   * Replaces the content with a longer version of the same file (securityfs lists only grow);
   * indexes the new complete lines only. A shorter or different file is re-indexed from scratch.
   */
  refresh(content: string): void {
    let from = this.text.length
    if (!content.startsWith(this.text)) {
      this.starts.length = 0
      this.text = ""
      from = 0
    }
    let lineStart = from
    for (let i = from; i < content.length; i++) {
      if (content.charCodeAt(i) === 10) {
        this.starts.push(lineStart)
        lineStart = i + 1
      }
    }
    // keep only complete lines: a half-written last line waits for the next read
    this.text = content.slice(0, lineStart)
  }

  /** Keylime `MeasurementList::read` semantics for `ima_ml_entry`. */
  slice(fromEntry: number): ImaSlice {
    const n = this.starts.length
    if (fromEntry === n) return { entry: n, list: "" }
    const entry = fromEntry > n || fromEntry < 0 ? 0 : fromEntry
    return { entry, list: n === 0 ? "" : this.text.slice(this.starts[entry]) }
  }
}
