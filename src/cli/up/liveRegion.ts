/**
 * The bottom of a terminal owned by `attest up`'s live table. Everything up prints while the table
 * is shown goes through the region: a line of text (a start-up line, a log line, TAMPERED) erases
 * the table, is printed in full where the table was, and the table is drawn again below it, so
 * lines scroll above the table and the table is never left behind. The table's rows are cut to the
 * terminal's width (an ellipsis marks the cut: the full text is in the log, the tenant and the
 * dashboard) and to its height, so each row is exactly one screen line and moving the cursor up
 * over the drawing always lands on its first line. A resize erases the old drawing as the
 * terminal re-wrapped it and draws the table for the new size; when the old drawing no longer fits
 * the screen, the screen is cleared and drawn again (the newest lines, then the table).
 *
 * `frame*` and `fit*` are pure (test/cli/upLiveRegion.test.ts); `makeLiveRegion` writes them to a
 * stream, and `regionConsole` is the Effect Console that routes `Console.log`, `Console.error` and
 * every logger's output into the region.
 */
import { Console, Effect } from "effect"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"

export interface TerminalSize {
  readonly columns: number
  readonly rows: number
}

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g

/** The cells a line takes on screen (ANSI sequences take none; one cell per code point). */
export const visibleLength = (line: string): number => Array.from(line.replace(ANSI, "")).length

/** A line cut to `columns` cells, its last cell an ellipsis when something was cut. For lines without ANSI sequences (the table's). */
export const fitLine = (line: string, columns: number): string => {
  const chars = Array.from(line)
  if (chars.length <= columns) return line
  return columns <= 0 ? "" : `${chars.slice(0, columns - 1).join("")}…`
}

/**
 * The table as drawn: each line cut one cell short of the width (a line filling the last column
 * leaves some terminals waiting to wrap), and at most `rows - 1` lines, the last then saying how
 * many rows are not shown.
 */
export const fitTable = (lines: ReadonlyArray<string>, size: TerminalSize): ReadonlyArray<string> => {
  const max = Math.max(1, size.rows - 1)
  const shown = lines.length <= max
    ? lines
    : [...lines.slice(0, max - 1), `… ${lines.length - (max - 1)} more rows not shown (a taller terminal shows them; the dashboard lists every agent)`]
  return shown.map((l) => fitLine(l, Math.max(1, size.columns - 1)))
}

/** Moves from below a drawing of `height` lines to its first line and clears to the end of the screen. */
export const eraseDrawing = (height: number): string => (height > 0 ? `\r\x1b[${height}A\x1b[J` : "")

/** What one update writes: the old drawing erased, the text (full lines, newline-terminated), the table. */
export const frame = (previousHeight: number, text: string, table: ReadonlyArray<string>): string =>
  eraseDrawing(previousHeight) + text + table.map((l) => `${l}\n`).join("")

/** The screen lines a text line takes at a width (a terminal wraps what is longer). */
const screenLines = (line: string, columns: number) => Math.max(1, Math.ceil(visibleLength(line) / Math.max(1, columns)))

/**
 * How many screen lines a drawing takes after a resize to `columns`: a terminal that re-wraps on
 * resize (tmux, VTE, kitty, iTerm2) spreads a line wider than the new width over several.
 */
export const drawnHeight = (drawn: ReadonlyArray<string>, columns: number): number =>
  drawn.reduce((n, l) => n + screenLines(l, columns), 0)

/**
 * After a resize that leaves no room to erase the old drawing: clear the screen, then the newest
 * text lines that fit above the table, then the table (the scrollback keeps what came before).
 */
export const resizeFrame = (recent: ReadonlyArray<string>, table: ReadonlyArray<string>, size: TerminalSize): string => {
  let room = size.rows - table.length - 1
  const shown: Array<string> = []
  for (let i = recent.length - 1; i >= 0 && room > 0; i--) {
    const need = screenLines(recent[i]!, size.columns)
    if (need > room) break
    shown.unshift(recent[i]!)
    room -= need
  }
  return `\x1b[H\x1b[2J${shown.map((l) => `${l}\n`).join("")}${table.map((l) => `${l}\n`).join("")}`
}

export interface LiveRegion {
  /** Prints text above the table (a trailing newline is added when missing). */
  readonly print: (text: string) => void
  /** Draws the table; `render` is given the terminal's width (it may shorten columns) and is called again on a resize. */
  readonly draw: (render: (columns: number) => ReadonlyArray<string>) => void
  /** Redraws for the terminal's current size. */
  readonly resize: () => void
  /** Leaves the table on screen as last drawn and hands the terminal back (cursor shown). */
  readonly close: () => void
}

const RECENT = 200

/** A region at the bottom of `out`, a terminal. */
export const makeLiveRegion = (out: NodeJS.WriteStream): LiveRegion => {
  let drawn: ReadonlyArray<string> = []
  let render: ((columns: number) => ReadonlyArray<string>) | undefined
  let closed = false
  const recent: Array<string> = []
  const size = (): TerminalSize => ({ columns: out.columns ?? 80, rows: out.rows ?? 24 })
  const table = () => (render === undefined ? [] : fitTable(render(size().columns), size()))
  const write = (text: string, height = drawn.length) => {
    const lines = table()
    out.write(frame(height, text, lines))
    drawn = lines
  }
  return {
    print: (text) => {
      const full = text.endsWith("\n") ? text : `${text}\n`
      if (closed) {
        out.write(full)
        return
      }
      recent.push(...full.slice(0, -1).split("\n"))
      if (recent.length > RECENT) recent.splice(0, recent.length - RECENT)
      write(full)
    },
    draw: (r) => {
      if (closed) return
      if (render === undefined) out.write("\x1b[?25l")
      render = r
      write("")
    },
    resize: () => {
      if (closed || render === undefined) return
      const now = size()
      const height = drawnHeight(drawn, now.columns)
      if (height < now.rows) return write("", height)
      const lines = table()
      out.write(resizeFrame(recent, lines, now))
      drawn = lines
    },
    close: () => {
      if (closed) return
      closed = true
      if (render !== undefined) out.write("\x1b[?25h")
    }
  }
}

/** A node console whose output (stdout and stderr alike) goes to the region, one print per call. */
const nodeConsoleInto = (region: LiveRegion) => {
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      region.print(chunk.toString())
      done()
    }
  })
  return new NodeConsole({ stdout: stream, stderr: stream, colorMode: "auto" })
}

/** The Effect Console over a node console (as Effect's default one is over the global console). */
export const effectConsoleOf = (c: globalThis.Console): Console.Console => ({
  [Console.TypeId]: Console.TypeId,
  assert: (condition, ...args) => Effect.sync(() => c.assert(condition, ...args)),
  clear: Effect.sync(() => c.clear()),
  count: (label) => Effect.sync(() => c.count(label)),
  countReset: (label) => Effect.sync(() => c.countReset(label)),
  debug: (...args) => Effect.sync(() => c.debug(...args)),
  dir: (item, options) => Effect.sync(() => c.dir(item, options)),
  dirxml: (...args) => Effect.sync(() => c.dirxml(...args)),
  error: (...args) => Effect.sync(() => c.error(...args)),
  group: (options) => Effect.sync(() => (options?.collapsed ? c.groupCollapsed(options.label) : c.group(options?.label))),
  groupEnd: Effect.sync(() => c.groupEnd()),
  info: (...args) => Effect.sync(() => c.info(...args)),
  log: (...args) => Effect.sync(() => c.log(...args)),
  table: (data, properties) => Effect.sync(() => c.table(data, properties)),
  time: (label) => Effect.sync(() => c.time(label)),
  timeEnd: (label) => Effect.sync(() => c.timeEnd(label)),
  timeLog: (label, ...args) => Effect.sync(() => c.timeLog(label, ...args)),
  trace: (...args) => Effect.sync(() => c.trace(...args)),
  warn: (...args) => Effect.sync(() => c.warn(...args)),
  unsafe: c
})

/** The Console that prints into the region: `Console.log`, `Console.error` and loggers (which write through it). */
export const regionConsole = (region: LiveRegion): Console.Console => effectConsoleOf(nodeConsoleInto(region))
