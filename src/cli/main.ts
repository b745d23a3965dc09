/** The `attest` program: the platform, the command line, runMain (the only place that calls it). */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect } from "effect"
import { teardown } from "./exitCode.js"
import { run } from "./Root.js"

run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true, teardown }))
