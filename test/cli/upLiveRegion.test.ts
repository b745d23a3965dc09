/**
 * src/cli/up/liveRegion.ts: the bottom of the terminal that `attest up`'s table owns. Each update
 * erases exactly the lines drawn before, prints text above and draws the table cut to the screen;
 * a resize erases the drawing as the terminal re-wrapped it. A fake terminal stream records what
 * is written; test/cli/upTerminal.test.ts runs the same through a real terminal (tmux).
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { drawnHeight, fitLine, fitTable, frame, makeLiveRegion, regionConsole, resizeFrame } from "../../src/cli/up/liveRegion.js"

const fakeTerminal = (columns: number, rows: number) => {
  const writes: Array<string> = []
  const out = { columns, rows, write: (s: string) => void writes.push(s) } as unknown as NodeJS.WriteStream & { columns: number; rows: number }
  return { out, writes }
}

describe("attest up's live region", () => {
  it("cuts a line to the width with an ellipsis and leaves shorter ones alone", () => {
    expect([fitLine("abcdef", 10), fitLine("abcdef", 6), fitLine("abcdef", 4), fitLine("abcdef", 0)]).toEqual(["abcdef", "abcdef", "abc…", ""])
  })

  it("fits a table one cell short of the width and within the screen's height", () => {
    expect(fitTable(["0123456789", "ab"], { columns: 8, rows: 10 })).toEqual(["012345…", "ab"])
    const tall = Array.from({ length: 10 }, (_, i) => `row ${i}`)
    expect(fitTable(tall, { columns: 200, rows: 5 })).toEqual(["row 0", "row 1", "row 2", "… 7 more rows not shown (a taller terminal shows them; the dashboard lists every agent)"])
  })

  it("erases the previous drawing, prints text above and draws the table", () => {
    expect(frame(0, "", ["h", "r"])).toEqual("h\nr\n")
    expect(frame(2, "log line\n", ["h", "r"])).toEqual("\r\x1b[2A\x1b[Jlog line\nh\nr\n")
  })

  it("counts the screen lines a drawing takes after the terminal re-wrapped it narrower", () => {
    expect(drawnHeight(["x".repeat(79), "y".repeat(10)], 80)).toEqual(2)
    expect(drawnHeight(["x".repeat(79), "y".repeat(10)], 40)).toEqual(3)
  })

  it("redraws a screen that no longer fits: cleared, the newest lines that fit, then the table", () => {
    expect(resizeFrame(["old", "a".repeat(25), "new"], ["h", "r"], { columns: 20, rows: 6 })).toEqual(`\x1b[H\x1b[2J${"a".repeat(25)}\nnew\nh\nr\n`)
  })

  it("keeps the table below everything printed, erasing only what it drew", () => {
    const { out, writes } = fakeTerminal(30, 10)
    const region = makeLiveRegion(out)
    region.print("attest up: data directory /x (new)")
    region.draw(() => ["#  agent  state", "1  a      Get Quote (3) and a long failure message"])
    region.print("[12:00:00.000] WARN agent a: attestation failed")
    region.draw(() => ["#  agent  state", "1  a      Invalid Quote (9)"])
    region.close()
    region.print("attest up: stopped")
    expect(writes).toEqual([
      "attest up: data directory /x (new)\n",
      "\x1b[?25l",
      "#  agent  state\n1  a      Get Quote (3) and …\n",
      "\r\x1b[2A\x1b[J[12:00:00.000] WARN agent a: attestation failed\n#  agent  state\n1  a      Get Quote (3) and …\n",
      "\r\x1b[2A\x1b[J#  agent  state\n1  a      Invalid Quote (9)\n",
      "\x1b[?25h",
      "attest up: stopped\n"
    ])
  })

  it("on a resize erases the drawing as re-wrapped and draws the table for the new width", () => {
    const { out, writes } = fakeTerminal(80, 24)
    const region = makeLiveRegion(out)
    region.draw((columns) => [columns >= 80 ? "wide header ".repeat(6) : "narrow"])
    out.columns = 40
    region.resize()
    expect(writes.slice(2)).toEqual(["\r\x1b[2A\x1b[Jnarrow\n"])
  })

  it("routes Console.log, Console.error and the loggers' console into the region", () => {
    const { out, writes } = fakeTerminal(80, 24)
    const region = makeLiveRegion(out)
    region.draw(() => ["table"])
    const console = regionConsole(region)
    Effect.runSync(console.log("a line", 2))
    Effect.runSync(console.error("an error"))
    console.unsafe.log("from a logger")
    const printed = writes.slice(2).map((w) => w.replace("\r\x1b[1A\x1b[J", "").replace(/table\n$/, ""))
    expect(printed.slice(-3)).toEqual(["a line 2\n", "an error\n", "from a logger\n"])
  })
})
