/**
 * Measured-boot policies: a name, the PCRs they depend on, and a pure evaluation of a reference
 * state against a parsed log ("" = pass, otherwise the reason). The registry of policies is a
 * service so deployments can add their own next to Keylime's `accept-all`, `reject-all`, `example`.
 */
import { Context, Effect, Layer } from "effect"
import type { EventLog } from "./eventLog.js"
import { UnknownMbPolicyError } from "./errors.js"
import { examplePolicy } from "./examplePolicy.js"

export interface MbPolicy {
  readonly name: string
  /** PCRs whose quoted values must equal the replay, and that must be in the quote. */
  readonly relevantPcrs: ReadonlySet<number>
  /** Pure: "" when the log satisfies the reference state, otherwise why not. */
  readonly evaluate: (refstate: unknown, log: EventLog) => string
}

export const acceptAllPolicy: MbPolicy = { name: "accept-all", relevantPcrs: new Set(), evaluate: () => "" }

export const rejectAllPolicy: MbPolicy = { name: "reject-all", relevantPcrs: new Set(), evaluate: () => "reject all" }

export const builtinMbPolicies: ReadonlyArray<MbPolicy> = [acceptAllPolicy, rejectAllPolicy, examplePolicy]

export interface MbPolicyRegistryShape {
  readonly names: ReadonlyArray<string>
  readonly get: (name: string) => Effect.Effect<MbPolicy, UnknownMbPolicyError>
}

/** Measured-boot policies by name (Keylime's `measured_boot_policy_name`). */
export class MbPolicyRegistry extends Context.Tag("attest/boot/MbPolicyRegistry")<MbPolicyRegistry, MbPolicyRegistryShape>() {
  /** A registry of the given policies (later entries replace earlier ones of the same name). */
  static make(policies: ReadonlyArray<MbPolicy>): MbPolicyRegistryShape {
    const byName = new Map(policies.map((p) => [p.name, p]))
    const names = [...byName.keys()]
    return {
      names,
      get: Effect.fn("MbPolicyRegistry.get")(function* (name: string) {
        const p = byName.get(name)
        if (p === undefined) return yield* new UnknownMbPolicyError({ name, known: names })
        return p
      })
    }
  }
  /** accept-all, reject-all and example. */
  static readonly Default = Layer.succeed(MbPolicyRegistry, MbPolicyRegistry.make(builtinMbPolicies))
  /** The built-ins plus `extra`. */
  static readonly with = (extra: ReadonlyArray<MbPolicy>) =>
    Layer.succeed(MbPolicyRegistry, MbPolicyRegistry.make([...builtinMbPolicies, ...extra]))
}
