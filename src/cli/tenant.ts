/**
 * `attest tenant …`: the administrator's client of the verifier, registrar and agents (spec §1.5,
 * §4): enrolment with the bootstrap key exchange, agent and policy management, registrar records.
 * Each subcommand loads its implementation (tenant.run.ts) only when it runs.
 */
import { Command } from "@effect/cli"
import { lazy } from "./lazy.js"
import { common, uuid } from "./tenant/options.js"

const load = () => import("./tenant.run.js")

const reglist = Command.make("reglist", common, lazy(load, (m) => m.reglist)).pipe(
  Command.withDescription("List the agents registered at the registrar: id, whether activated, contact address, registrations.")
)
const regstatus = Command.make("regstatus", { ...common, uuid }, lazy(load, (m) => m.regstatus)).pipe(
  Command.withDescription("Show an agent's registrar record: address, registrations, EK certificate issuer, AK, mTLS certificate.")
)
const regdelete = Command.make("regdelete", { ...common, uuid }, lazy(load, (m) => m.regdelete)).pipe(
  Command.withDescription("Delete an agent's registration from the registrar (it must register again).")
)

export const tenantCommand = Command.make("tenant").pipe(
  Command.withDescription(
    "Administer agents: enrol them (add: registrar record, EK certificate, identity quote, bootstrap keys, policies), " +
      "watch and manage them at the verifier, manage runtime and measured-boot policies, and read the registrar. " +
      "Options from flags, ATTEST_TENANT_* and the [tenant] section. Exit 0 success, 1 failure (one line), 2 usage."
  ),
  Command.withSubcommands([reglist, regstatus, regdelete])
)
