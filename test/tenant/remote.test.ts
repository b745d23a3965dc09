/**
 * How one tenant request fails or is tried again: a 503 (the server says "later") is retried up to
 * max_retries, a refusal is not; every failure becomes one sentence naming the server.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Ref } from "effect"
import { NotFound, ServiceUnavailable } from "../../schemas/Envelope.js"
import { describeTransport, remote, type RemoteOptions } from "../../src/tenant/remote.js"

const options = (retries: number): RemoteOptions => ({ service: "verifier", url: "https://v:8881", what: "status of agent a1", timeout: Duration.seconds(10), retries, retryInterval: Duration.millis(10) })

/** A call that answers 503 `failures` times, then succeeds. */
const flaky = (failures: number) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make(0)
    const call = Effect.flatMap(Ref.updateAndGet(calls, (n) => n + 1), (n) =>
      n <= failures ? Effect.fail(new ServiceUnavailable({ message: "The verifier database is unavailable at the moment; retry later" })) : Effect.succeed("ok"))
    return { calls, call }
  })

describe("tenant requests", () => {
  it.live("a 503 is asked again up to max_retries; then the server's text is the reason", () =>
    Effect.gen(function*() {
      const twice = yield* flaky(2)
      expect(yield* remote(options(3), twice.call)).toEqual("ok")
      expect(yield* Ref.get(twice.calls)).toEqual(3)

      const always = yield* flaky(10)
      const failed = yield* Effect.either(remote(options(1), always.call))
      expect(yield* Ref.get(always.calls)).toEqual(2)
      expect(Either.isLeft(failed) && { message: failed.left.message, status: failed.left.status, service: failed.left.service }).toEqual({
        message: "status of agent a1: the verifier answered 503: The verifier database is unavailable at the moment; retry later",
        status: 503,
        service: "verifier"
      })
    }))

  it.live("a refusal is final at once", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const refused = yield* Effect.either(remote(options(5), Effect.zipRight(Ref.update(calls, (n) => n + 1), Effect.fail(new NotFound({ message: "agent id not found" })))))
      expect(yield* Ref.get(calls)).toEqual(1)
      expect(Either.isLeft(refused) && refused.left.message).toEqual("status of agent a1: the verifier answered 404: agent id not found")
    }))

  it("transport failures name the server and what to check", () => {
    const err = (code: string) => ({ cause: { code, message: `x ${code}` } })
    expect(describeTransport("registrar", "https://r:8891", err("ECONNREFUSED"))).toEqual("cannot reach the registrar at https://r:8891: connection refused (is it running?)")
    expect(describeTransport("agent", "https://a:9002", err("ERR_SSL_TLSV1_ALERT_UNKNOWN_CA"))).toEqual(
      "TLS with the agent at https://a:9002 failed (ERR_SSL_TLSV1_ALERT_UNKNOWN_CA); the agent's certificate must be the mtls_cert it registered, and it must trust the tenant's CA"
    )
    expect(describeTransport("verifier", "https://v:8881", err("ENOTFOUND"))).toEqual("cannot reach the verifier at https://v:8881: unknown host")
  })
})
