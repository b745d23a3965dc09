/** The verifier's repositories (tables in src/db/migrations/0010–0012). */
export * from "./repo/AgentRepo.js"
export * from "./repo/NotificationOutbox.js"
export * from "./repo/PolicyRepo.js"
export * from "./repo/rows.js"
