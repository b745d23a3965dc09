/** Bootstrap keys (U, V, K), their HMACs, the agent's NK and Keylime payload encryption. */
export * from "./bootstrap.js"
export * from "./errors.js"
export * from "./nk.js"
export * from "./payload.js"
