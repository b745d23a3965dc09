/** How the `attest tenant` commands run: each is its src/tenant function inside runTenant (run.ts). */
import { Effect } from "effect"
import { checkAgentId, regdelete as regDelete, reglist as regList, regstatus as regStatus } from "../tenant/registrarCommands.js"
import { type CommonFlags, runTenant } from "../tenant/run.js"

type WithUuid = CommonFlags & { readonly uuid: string }

export const reglist = (flags: CommonFlags) => runTenant("reglist", flags, regList)

export const regstatus = (flags: WithUuid) =>
  runTenant("regstatus", flags, (c, out) => Effect.flatMap(checkAgentId(flags.uuid), (id) => regStatus(c, out, id)))

export const regdelete = (flags: WithUuid) =>
  runTenant("regdelete", flags, (c, out) => Effect.flatMap(checkAgentId(flags.uuid), (id) => regDelete(c, out, id)))
