/** Why cluster mode does not start; the message names the `[verifier]` setting to change. */
import { Schema } from "effect"

/** `cluster = true` with a database several processes cannot share, a runner port that cannot be listened on, or no usable TLS identity for the runners. */
export class ClusterModeRefused extends Schema.TaggedError<ClusterModeRefused>()("ClusterModeRefused", {
  message: Schema.String
}) {}
