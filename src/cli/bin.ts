#!/usr/bin/env node
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { teardown } from "./exitCode.js"
import { run } from "./Root.js"

run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true, teardown }))
