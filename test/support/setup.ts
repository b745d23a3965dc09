import { addEqualityTesters } from "@effect/vitest"
import { FastCheck } from "effect"

addEqualityTesters()

// Property tests explore new inputs on every local run; CI (ATTEST_TEST_ALL=1) replays one fixed
// seed so a landing never depends on luck. ATTEST_FC_SEED replays a seed a failure printed.
const seed = process.env["ATTEST_FC_SEED"] ?? (process.env["ATTEST_TEST_ALL"] === "1" ? "20261121" : undefined)
if (seed !== undefined) FastCheck.configureGlobal({ seed: Number(seed) })
