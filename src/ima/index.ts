/** The IMA engine: measurement-list parsing, template hashes, PCR 10 replay, runtime-policy evaluation. */
export * from "./dsse.js"
export * from "./entry.js"
export * from "./failure.js"
export * from "./policy.js"
export * from "./replay.js"
export * from "./signatures.js"
export * from "./state.js"
export * from "./verify.js"
