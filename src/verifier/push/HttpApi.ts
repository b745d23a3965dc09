/**
 * The push routes as an HttpApi of their own, for serving them alone (tests, benchmarks) until
 * they are mounted in the verifier's VerifierApi (add `PushGroup` to it and provide PushHttpLive
 * built against that API).
 */
import { HttpApi } from "@effect/platform"
import { PushGroup } from "./Api.js"

export class Api extends HttpApi.make("verifier-push").add(PushGroup) {}
