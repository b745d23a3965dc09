/**
 * `attest tenant …`: the administrator's client of the verifier, registrar and agents (spec §1.5,
 * §4): enrolment with the bootstrap key exchange, agent and policy management, registrar records.
 * Each subcommand loads its implementation (tenant.run.ts) only when it runs.
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "./lazy.js"
import { common, uuid } from "./tenant/options.js"

const load = () => import("./tenant.run.js")

const text = (name: string, description: string) => Options.text(name).pipe(Options.withDescription(description), Options.optional)
const file = (name: string, description: string) => Options.file(name, { exists: "yes" }).pipe(Options.withDescription(description), Options.optional)

const enrolment = {
  ...common,
  uuid,
  ip: text("ip", "agent address (default: the one it registered)"),
  port: Options.integer("port").pipe(Options.withDescription("agent port (default: the one it registered)"), Options.optional),
  runtimePolicy: file("runtime-policy", "runtime (IMA) policy JSON file; stored under --runtime-policy-name when given"),
  runtimePolicyName: text("runtime-policy-name", "name of a runtime policy stored at the verifier (or the name for --runtime-policy)"),
  runtimePolicyKey: file("runtime-policy-key", "public key (PEM or DER) that verifies a signed --runtime-policy (DSSE envelope, or with --runtime-policy-sig)"),
  runtimePolicySig: file("runtime-policy-sig", "detached signature over the --runtime-policy file"),
  mbRefstate: file("mb-refstate", "measured-boot reference state JSON file; stored under --mb-policy-name when given"),
  mbPolicyName: text("mb-policy-name", "name of a measured-boot policy stored at the verifier (or the name for --mb-refstate)"),
  tpmPolicy: text("tpm-policy", "tpm_policy JSON, e.g. '{\"15\": [\"<hex>\"]}' (the quote mask is completed for the policies in use)"),
  payload: file("payload", "file sent to the agent encrypted with K (arrives as decrypted_payload)"),
  cert: Options.directory("cert", { exists: "yes" }).pipe(
    Options.withDescription("CA directory: send a certificate package (agent certificate and key, CA, revocation notifier certificate, --include files) as the payload"),
    Options.optional
  ),
  include: Options.text("include").pipe(
    Options.withDescription("file or directory of files added to the --cert package (an autorun.sh runs on arrival); repeatable"),
    Options.repeated
  ),
  revocationKey: file("revocation-key", "PEM private key the verifier signs this agent's revocation messages with (--cert makes one)"),
  verify: Options.boolean("verify").pipe(Options.withDescription("wait for the verifier to deliver V and check K at the agent (keys/verify); a mismatch stops the agent")),
  push: Options.boolean("push").pipe(
    Options.withAlias("push-model"),
    Options.withDescription("a push agent (API 3.0; Keylime's --push-model): contact no agent, no payload or V; the verifier is told it sends its evidence (attestation_model push)")
  )
}

type RunModule = Awaited<ReturnType<typeof load>>
const agentCmd = (name: string, pick: (m: RunModule) => RunModule["status"], description: string) =>
  Command.make(name, { ...common, uuid }, lazy(load, pick)).pipe(Command.withDescription(description))

const add = Command.make("add", enrolment, lazy(load, (m) => m.add)).pipe(
  Command.withDescription(
    "Enrol an agent: its registrar record (active), EK certificate against ek_ca_dir, an identity quote checked with its AK and the PCR 16 binding of its NK, " +
      "U (with the payload encrypted under K) to the agent, V and the policies to the verifier; --verify waits for V and checks K. " +
      "With --push, a push agent: its registrar record and EK certificate, then the verifier with its AK and policies."
  )
)
const update = Command.make("update", enrolment, lazy(load, (m) => m.update)).pipe(
  Command.withDescription("Add an agent again with new keys and the given policies (as Keylime's tenant): every input is checked first, then it is deleted at the verifier and added.")
)
const list = Command.make(
  "list",
  { ...common, state: text("state", "only agents in this verifier state (number or name, e.g. 3 or 'get quote') or attestation status (pass, fail, timeout, pending)") },
  lazy(load, (m) => m.list)
).pipe(Command.withDescription("One line per agent: verifier state (a push agent's acceptance), verdict, attestations, last success, last failure, and whether the registrar holds it active."))
const bulkinfo = Command.make("bulkinfo", common, lazy(load, (m) => m.bulkinfo)).pipe(
  Command.withDescription("Every agent's full status at the verifier (GET agents?bulk=true).")
)

const reglist = Command.make("reglist", common, lazy(load, (m) => m.reglist)).pipe(
  Command.withDescription("List the agents registered at the registrar: id, whether activated, contact address, registrations.")
)
const regstatus = Command.make("regstatus", { ...common, uuid }, lazy(load, (m) => m.regstatus)).pipe(
  Command.withDescription("Show an agent's registrar record: address, registrations, EK certificate issuer, AK, mTLS certificate.")
)
const regdelete = Command.make("regdelete", { ...common, uuid }, lazy(load, (m) => m.regdelete)).pipe(
  Command.withDescription("Delete an agent's registration from the registrar (it must register again).")
)

const policyName = Options.text("name").pipe(Options.withDescription("policy name"))
const policyFile = Options.file("file", { exists: "yes" }).pipe(Options.withDescription("policy file"))
const policyGroup = (group: "runtime-policy" | "mb-policy", what: string, whats: string) => {
  const kind = group === "runtime-policy" ? "runtime" : "mb"
  const upload = {
    ...common,
    name: policyName,
    file: policyFile,
    ...(kind === "runtime"
      ? {
        tpmPolicy: text("tpm-policy", "tpm_policy JSON stored with the policy"),
        key: file("key", "public key (PEM or DER) that verifies a signed policy (DSSE envelope, or with --sig)"),
        sig: file("sig", "detached signature over the policy file")
      }
      : {})
  }
  return Command.make(group).pipe(
    Command.withDescription(`Named ${whats} at the verifier: add, list, show, delete, update.`),
    Command.withSubcommands([
      Command.make("add", upload, lazy(load, (m) => m.policyAdd(kind))).pipe(Command.withDescription(`Store a ${what} under a name.`)),
      Command.make("list", common, lazy(load, (m) => m.policyList(kind))).pipe(Command.withDescription(`List the stored ${whats}.`)),
      Command.make("show", { ...common, name: policyName }, lazy(load, (m) => m.policyShow(kind))).pipe(Command.withDescription(`Print a stored ${what}.`)),
      Command.make("delete", { ...common, name: policyName }, lazy(load, (m) => m.policyDelete(kind))).pipe(Command.withDescription(`Delete a ${what} no agent uses.`)),
      Command.make("update", upload, lazy(load, (m) => m.policyUpdate(kind))).pipe(Command.withDescription(`Replace a stored ${what}.`))
    ])
  )
}

export const tenantCommand = Command.make("tenant").pipe(
  Command.withDescription(
    "Administer agents: enrol them (add: registrar record, EK certificate, identity quote, bootstrap keys, policies), " +
      "watch and manage them at the verifier, manage runtime and measured-boot policies, and read the registrar. " +
      "Options from flags, ATTEST_TENANT_* and the [tenant] section. Exit 0 success, 1 failure (one line), 2 usage."
  ),
  Command.withSubcommands([
    add,
    update,
    agentCmd("delete", (m) => m.del, "Remove an agent from the verifier (waits while it is terminating)."),
    agentCmd("status", (m) => m.status, "An agent's model and state (a pull agent's operational state and address, a push agent's acceptance PASS, FAIL or TIMEOUT), the verdict of its latest attestation, attestation count, last success, last failure with what it said."),
    list,
    agentCmd("reactivate", (m) => m.reactivate, "Start attesting a stopped or failed agent again."),
    agentCmd("stop", (m) => m.stop, "Stop attesting an agent (state 10) without deleting it."),
    bulkinfo,
    reglist,
    regstatus,
    regdelete,
    policyGroup("runtime-policy", "runtime (IMA) policy", "runtime (IMA) policies"),
    policyGroup("mb-policy", "measured-boot policy", "measured-boot policies")
  ])
)
