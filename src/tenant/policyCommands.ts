/**
 * `runtime-policy add|list|show|delete|update` and `mb-policy add|list|show|delete|update`: the
 * verifier's named policies (spec §2.4, §4.1: `allowlists`, and `mbpolicies` from API 2.3). A
 * runtime policy file is sent as base64 of its JSON, a measured-boot reference state as its JSON text.
 */
import * as fs from "node:fs"
import { Effect } from "effect"
import { UsageError } from "../config/usageError.js"
import type { Connections } from "./connect.js"
import { table } from "./render.js"
import type { Output } from "./run.js"

export type PolicyKind = "runtime" | "mb"

const label = (k: PolicyKind) => (k === "runtime" ? "runtime policy" : "measured-boot policy")

export const readPolicyFile = (flag: string, file: string) =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: (e) => new UsageError({ message: `--${flag} ${file}: ${e instanceof Error ? e.message : String(e)}` })
  })

/** A policy name on the command line: what the verifier accepts in a path. */
export const checkPolicyName = (name: string): Effect.Effect<string, UsageError> =>
  /^[A-Za-z0-9._-]{1,255}$/.test(name)
    ? Effect.succeed(name)
    : Effect.fail(new UsageError({ message: `--name ${name}: a policy name is 1-255 letters, digits, '-', '_' or '.'` }))

export interface PolicyUpload {
  readonly name: string
  readonly file: string
  /** Runtime policies only: a tpm_policy JSON stored with it. */
  readonly tpmPolicy?: string | undefined
  /** Runtime policies only: files of the key that verifies a signed policy and of a detached signature. */
  readonly key?: string | undefined
  readonly sig?: string | undefined
}

export const policyUpload = (c: Connections, out: Output, kind: PolicyKind, o: PolicyUpload, replace: boolean) =>
  Effect.gen(function*() {
    const name = yield* checkPolicyName(o.name)
    const text = yield* readPolicyFile("file", o.file)
    const v = yield* c.verifier
    const what = `${replace ? "update" : "add"} ${label(kind)} ${name}`
    if (kind === "runtime") {
      if (o.sig !== undefined && o.key === undefined) return yield* new UsageError({ message: "--sig needs --key to verify it" })
      const key = o.key === undefined ? undefined : Buffer.from(yield* readPolicyFile("key", o.key), "utf8").toString("base64")
      const sig = o.sig === undefined ? undefined : (yield* Effect.try({ try: () => fs.readFileSync(o.sig!), catch: (e) => new UsageError({ message: `--sig ${o.sig}: ${String(e)}` }) })).toString("base64")
      const payload = {
        runtime_policy: Buffer.from(text, "utf8").toString("base64"),
        ...(o.tpmPolicy === undefined ? {} : { tpm_policy: o.tpmPolicy }),
        ...(key === undefined ? {} : { runtime_policy_key: key }),
        ...(sig === undefined ? {} : { runtime_policy_sig: sig })
      }
      yield* c.call("verifier", v.url, what, replace ? v.api.allowlists.update({ path: { name }, payload }) : v.api.allowlists.add({ path: { name }, payload }))
    } else {
      const payload = { mb_policy: text }
      yield* c.call("verifier", v.url, what, replace ? v.api.mbpolicies.update({ path: { name }, payload }) : v.api.mbpolicies.add({ path: { name }, payload }))
    }
    yield* out.show({ name, [replace ? "updated" : "added"]: true }, () => `${label(kind)} ${name} ${replace ? "updated" : "added"} at the verifier`)
  })

export const policyList = (c: Connections, out: Output, kind: PolicyKind) =>
  Effect.gen(function*() {
    const v = yield* c.verifier
    const names = kind === "runtime"
      ? (yield* c.call("verifier", v.url, `list ${label(kind)}s`, v.api.allowlists.list()))["runtimepolicy names"]
      : (yield* c.call("verifier", v.url, `list ${label(kind)}s`, v.api.mbpolicies.list()))["mbpolicy names"]
    yield* out.show({ names }, () => names.length === 0 ? `no ${label(kind)}s` : table(["name"], names.map((n) => [n])))
  })

export const policyShow = (c: Connections, out: Output, kind: PolicyKind, rawName: string) =>
  Effect.gen(function*() {
    const name = yield* checkPolicyName(rawName)
    const v = yield* c.verifier
    if (kind === "runtime") {
      const p = yield* c.call("verifier", v.url, `show ${label(kind)} ${name}`, v.api.allowlists.show({ path: { name } }))
      yield* out.show(p, () => p.runtime_policy)
    } else {
      const p = yield* c.call("verifier", v.url, `show ${label(kind)} ${name}`, v.api.mbpolicies.show({ path: { name } }))
      yield* out.show(p, () => p.mb_policy ?? "null")
    }
  })

export const policyDelete = (c: Connections, out: Output, kind: PolicyKind, rawName: string) =>
  Effect.gen(function*() {
    const name = yield* checkPolicyName(rawName)
    const v = yield* c.verifier
    const what = `delete ${label(kind)} ${name}`
    if (kind === "runtime") yield* c.call("verifier", v.url, what, v.api.allowlists.remove({ path: { name } }))
    else yield* c.call("verifier", v.url, what, v.api.mbpolicies.remove({ path: { name } }))
    yield* out.show({ name, deleted: true }, () => `${label(kind)} ${name} deleted at the verifier`)
  })
