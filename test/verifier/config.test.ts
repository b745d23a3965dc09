/**
 * The [verifier] options the verifier core reads: Keylime's names and defaults, and the notifier
 * list refusing names it does not know, naming the option.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { resolveSection } from "../../src/config/load.js"
import { parseToml } from "../../src/config/toml.js"

const parseDoc = (text: string) => Either.getOrThrow(parseToml(text))
const verifier = (env: Record<string, string> = {}, toml?: string) =>
  resolveSection("verifier", toml === undefined ? { env } : { env, file: { path: "/etc/attest.toml", doc: parseDoc(toml) } })

describe("verifier core options", () => {
  it("default to Keylime's values", () => {
    const v = Either.getOrThrow(verifier()).values
    expect({
      require_allow_list_signatures: v.require_allow_list_signatures,
      enabled_revocation_notifications: v.enabled_revocation_notifications,
      webhook_url: v.webhook_url,
      max_upload_size: v.max_upload_size,
      agent_ca: v.agent_ca
    }).toEqual({
      require_allow_list_signatures: false,
      enabled_revocation_notifications: ["agent"],
      webhook_url: "",
      max_upload_size: 104_857_600,
      agent_ca: []
    })
    expect([v.notification_queue_size, v.notification_retry_interval, v.notification_max_attempts, v.policy_cache_size]).toEqual([10_000, 2, 0, 16])
  })

  it("reads the notifier list in every list form and refuses an unknown notifier naming the option", () => {
    expect(Either.getOrThrow(verifier({ ATTEST_VERIFIER_ENABLED_REVOCATION_NOTIFICATIONS: "agent, webhook" })).values.enabled_revocation_notifications)
      .toEqual(["agent", "webhook"])
    expect(Either.getOrThrow(verifier({}, "[verifier]\nenabled_revocation_notifications = [\"webhook\"]\n")).values.enabled_revocation_notifications)
      .toEqual(["webhook"])
    expect(Either.getOrThrow(verifier({ ATTEST_VERIFIER_ENABLED_REVOCATION_NOTIFICATIONS: "[]" })).values.enabled_revocation_notifications).toEqual([])
    const bad = verifier({ ATTEST_VERIFIER_ENABLED_REVOCATION_NOTIFICATIONS: "['agent', 'zeromq']" })
    expect(Either.isLeft(bad) && bad.left.message).toContain("[verifier] enabled_revocation_notifications: \"zeromq\" is not one of agent, webhook")
    const badSize = verifier({ ATTEST_VERIFIER_NOTIFICATION_QUEUE_SIZE: "0" })
    expect(Either.isLeft(badSize) && badSize.left.message).toContain("[verifier] notification_queue_size: must be at least 1")
  })
})
