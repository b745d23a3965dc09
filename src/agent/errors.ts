/** What the agent answers when a request cannot be served: status and the rust-keylime text. */
import { Schema } from "effect"

export class AgentRequestError extends Schema.TaggedError<AgentRequestError>()("AgentRequestError", {
  status: Schema.Int,
  message: Schema.String
}) {}

export const badRequest = (message: string) => new AgentRequestError({ status: 400, message })
export const serverError = (message: string) => new AgentRequestError({ status: 500, message })
