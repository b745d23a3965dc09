/**
 * One fuzz target = one vitest test that first replays every input stored under
 * test/fuzz/corpus/<target>/ and then checks fresh inputs:
 *   - under `npm test`: `runs` inputs (CI fixes the seed in test/support/setup.ts);
 *   - under `npm run fuzz -- <target> --minutes N` (scripts/fuzz.ts sets ATTEST_FUZZ_*): batches with
 *     random seeds until the time is up; every failing input (shrunk) is written to the corpus, where
 *     the next `npm test` replays it, and the figures go to ATTEST_FUZZ_REPORT.
 * A check throws (expect) when an invariant breaks.
 */
import { it } from "@effect/vitest"
import { Effect, FastCheck as fc, type Scope } from "effect"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { corpusEntry, fromJson } from "./corpusCodec.js"
import { FUZZ_TARGETS, type FuzzTargetName } from "./targets.js"

export const CORPUS_DIR = join(import.meta.dirname, "corpus")

export interface FuzzTarget<A, Ctx> {
  readonly name: FuzzTargetName
  readonly input: fc.Arbitrary<A>
  readonly check: (input: A, ctx: Ctx) => void | Promise<void>
  /** Inputs per `npm test` run. */
  readonly runs: number
}

const longTarget = process.env["ATTEST_FUZZ_TARGET"]
const minutes = Number(process.env["ATTEST_FUZZ_MINUTES"] ?? "1")
const reportFile = process.env["ATTEST_FUZZ_REPORT"]
/** Failing inputs kept per long run before it stops: a bug found once is usually found again. */
const MAX_FINDINGS = 5

export const corpusOf = (name: string): ReadonlyArray<{ readonly file: string; readonly input: unknown }> => {
  const dir = join(CORPUS_DIR, name)
  if (!existsSync(dir)) return []
  return readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => ({
    file: join(dir, f),
    input: fromJson(JSON.parse(readFileSync(join(dir, f), "utf8")))
  }))
}

const replayCorpus = async <A, Ctx>(t: FuzzTarget<A, Ctx>, ctx: Ctx) => {
  for (const { file, input } of corpusOf(t.name)) {
    try {
      await t.check(input as A, ctx)
    } catch (e) {
      throw new Error(`corpus input ${file} fails again: ${e instanceof Error ? e.message : String(e)}`, { cause: e })
    }
  }
}

const property = <A, Ctx>(t: FuzzTarget<A, Ctx>, ctx: Ctx) =>
  fc.asyncProperty(t.input, async (a) => {
    await t.check(a, ctx)
  })

const runLong = async <A, Ctx>(t: FuzzTarget<A, Ctx>, ctx: Ctx) => {
  const started = Date.now()
  const deadline = started + minutes * 60_000
  let tried = 0
  let batches = 0
  const findings: Array<{ readonly file: string; readonly seed: number; readonly error: string }> = []
  while (Date.now() < deadline && findings.length < MAX_FINDINGS) {
    const seed = Math.floor(Math.random() * 0x7fffffff)
    const details = await fc.check(property(t, ctx), { seed, numRuns: Math.max(t.runs, 20) })
    batches++
    tried += details.numRuns
    if (details.failed && details.counterexample !== null) {
      const entry = corpusEntry(details.counterexample[0])
      mkdirSync(join(CORPUS_DIR, t.name), { recursive: true })
      const file = join(CORPUS_DIR, t.name, entry.name)
      writeFileSync(file, entry.text)
      const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
      findings.push({ file, seed, error: error.slice(0, 2000) })
    }
  }
  const report = { target: t.name, tried, batches, seconds: Math.round((Date.now() - started) / 1000), findings }
  if (reportFile !== undefined) writeFileSync(reportFile, JSON.stringify(report, null, 2))
  if (findings.length > 0) throw new Error(`${findings.length} failing input(s) written to the corpus:\n${findings.map((f) => `${f.file}: ${f.error}`).join("\n")}`)
}

const run = async <A, Ctx>(t: FuzzTarget<A, Ctx>, ctx: Ctx) => {
  await replayCorpus(t, ctx)
  if (longTarget === t.name) await runLong(t, ctx)
  else await fc.assert(property(t, ctx), { numRuns: t.runs })
}

const skipped = (name: string) => longTarget !== undefined && longTarget !== name
const timeout = (name: string) => (longTarget === name ? minutes * 60_000 + 180_000 : 120_000)

/** A target that needs nothing set up (a parser). */
export const fuzz = <A>(t: FuzzTarget<A, void>) =>
  it.skipIf(skipped(t.name))(`fuzz ${t.name}: ${FUZZ_TARGETS[t.name].about}`, () => run(t, undefined), timeout(t.name))

/** A target whose checks need something started first (servers): once per test, in its scope. */
export const fuzzWith = <A, Ctx, E>(setup: Effect.Effect<Ctx, E, Scope.Scope>, t: FuzzTarget<A, Ctx>) =>
  it.scopedLive.skipIf(skipped(t.name))(
    `fuzz ${t.name}: ${FUZZ_TARGETS[t.name].about}`,
    () => Effect.flatMap(Effect.orDie(setup), (ctx) => Effect.promise(() => run(t, ctx))),
    timeout(t.name)
  )
