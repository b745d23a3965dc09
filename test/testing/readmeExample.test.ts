/**
 * The README's example of attest/testing ("Testing your fleet"), run as a user's vitest file would
 * run it, with the package import pointed at the source tree; the last test checks that the README
 * still shows exactly this code.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect as same, it as check } from "vitest"

// --- README example ---
import { Effect } from "effect"
import { expect, it } from "vitest"
import { databaseDown, networkDown, runFleet, runsBinary } from "../../src/testing/index.js"

it("flags the machine that ran an unknown binary, and the one that went dark", async () => {
  const run = await Effect.runPromise(runFleet({
    seed: "my-fleet",
    agents: 10, // agent 10 pushes its evidence (every tenth does); the verifier polls the others
    duration: "20 minutes",
    script: [
      runsBinary(3, "7 minutes", "/usr/local/bin/miner"),
      databaseDown("9 minutes", "10 minutes"),
      networkDown(5, "12 minutes")
    ]
  }))
  const notPassed = run.lines.filter((l) => l.result !== "pass").map((l) => `${l.agentId} ${l.result}`)
  expect(notPassed).toEqual([
    "agent-03 fail", // ima.validation.ima-ng.not_in_allowlist at 00:07:00
    "agent-05 retry",
    "agent-05 retry",
    "agent-05 retry",
    "agent-05 failed" // internal.verifier.not_reachable: polling ends
  ])
}, 300_000)
// --- end of the README example ---

const README = fileURLToPath(new URL("../../README.md", import.meta.url))
const between = (text: string, start: string, end: string) => text.slice(text.indexOf(start) + start.length, text.indexOf(end))

describe("README: Testing your fleet", () => {
  check("shows exactly the example this file runs", () => {
    const block = /## Testing your fleet: attest\/testing[\s\S]*?```ts\n([\s\S]*?)```/.exec(readFileSync(README, "utf8"))
    same(block).not.toBeNull()
    const own = between(readFileSync(fileURLToPath(import.meta.url), "utf8"), "// --- README example ---\n", "// --- end of the README example ---\n")
    same(block![1]!.replace('"attest/testing"', '"../../src/testing/index.js"')).toEqual(own)
  })
})
