/** How the `attest tenant` commands run: each is its src/tenant function inside runTenant (run.ts). */
import { Effect, Option } from "effect"
import { add as addAgent, type AddOptions, addPush, update as updateAgent, updatePush } from "../tenant/add.js"
import { bulkinfo as bulkInfo, list as listAgents, parseStateFilter, reactivate as reactivateAgent, remove, status as agentStatus, stop as stopAgent } from "../tenant/agentCommands.js"
import { type PolicyKind, policyDelete as delPolicy, policyList as listPolicies, policyShow as showPolicy, policyUpload } from "../tenant/policyCommands.js"
import { checkAgentId, regdelete as regDelete, reglist as regList, regstatus as regStatus } from "../tenant/registrarCommands.js"
import type { Connections } from "../tenant/connect.js"
import { type CommonFlags, type Output, runTenant } from "../tenant/run.js"

type WithUuid = CommonFlags & { readonly uuid: string }

const forAgent = (name: string, f: (c: Connections, out: Output, id: string) => Effect.Effect<void, any, any>) => (flags: WithUuid) =>
  runTenant(name, flags, (c, out) => Effect.flatMap(checkAgentId(flags.uuid), (id) => f(c, out, id)))

export const reglist = (flags: CommonFlags) => runTenant("reglist", flags, regList)
export const regstatus = forAgent("regstatus", regStatus)
export const regdelete = forAgent("regdelete", regDelete)

export const status = forAgent("status", agentStatus)
export const stop = forAgent("stop", stopAgent)
export const reactivate = forAgent("reactivate", reactivateAgent)
export const del = forAgent("delete", remove)

export const bulkinfo = (flags: CommonFlags) => runTenant("bulkinfo", flags, bulkInfo)
export const list = (flags: CommonFlags & { readonly state: Option.Option<string> }) =>
  runTenant("list", flags, (c, out) =>
    Effect.flatMap(
      Option.match(flags.state, { onNone: () => Effect.succeed(undefined), onSome: parseStateFilter }),
      (state) => listAgents(c, out, state)
    ))

type EnrolFlags = WithUuid & Omit<AddOptions, "agentId"> & { readonly push: boolean }
const enrol = (name: string, pull: typeof addAgent, push: typeof addAgent) => (flags: EnrolFlags) =>
  runTenant(name, flags, (c, out) => Effect.flatMap(checkAgentId(flags.uuid), (agentId) => (flags.push ? push : pull)(c, out, { ...flags, agentId })))
export const add = enrol("add", addAgent, (c, out, o) => addPush(c, out, o))
export const update = enrol("update", updateAgent, updatePush)

const group = (kind: PolicyKind) => (kind === "runtime" ? "runtime-policy" : "mb-policy")
type UploadFlags = CommonFlags & {
  readonly name: string
  readonly file: string
  readonly tpmPolicy?: Option.Option<string>
  readonly key?: Option.Option<string>
  readonly sig?: Option.Option<string>
}
const given = (o: Option.Option<string> | undefined) => (o === undefined ? undefined : Option.getOrUndefined(o))
const upload = (kind: PolicyKind, replace: boolean) => (flags: UploadFlags) =>
  runTenant(`${group(kind)} ${replace ? "update" : "add"}`, flags, (c, out) =>
    policyUpload(c, out, kind, { name: flags.name, file: flags.file, tpmPolicy: given(flags.tpmPolicy), key: given(flags.key), sig: given(flags.sig) }, replace))
export const policyAdd = (kind: PolicyKind) => upload(kind, false)
export const policyUpdate = (kind: PolicyKind) => upload(kind, true)
export const policyList = (kind: PolicyKind) => (flags: CommonFlags) => runTenant(`${group(kind)} list`, flags, (c, out) => listPolicies(c, out, kind))
export const policyShow = (kind: PolicyKind) => (flags: CommonFlags & { readonly name: string }) =>
  runTenant(`${group(kind)} show`, flags, (c, out) => showPolicy(c, out, kind, flags.name))
export const policyDelete = (kind: PolicyKind) => (flags: CommonFlags & { readonly name: string }) =>
  runTenant(`${group(kind)} delete`, flags, (c, out) => delPolicy(c, out, kind, flags.name))
