/**
 * The systemd units of attest's four long-running commands, in one table. `npm run nix` writes them
 * twice from here: as plain unit files under packaging/systemd (non-Nix hosts) and as
 * nix/units.generated.nix, which the NixOS module (nix/module.nix) turns into `systemd.services`
 * with its store paths, settings file and the state directories its settings name. So the
 * hardening of both is one list, and test/packaging checks both against it.
 *
 * Choices, directive by directive, where they are not the obvious ones:
 * - One system user `attest` for all four, as Keylime runs all of its components as `keylime`:
 *   registrar and verifier share /var/lib/attest (the verifier generates the CA in cv_ca, the
 *   registrar and a co-located agent read it). The agent adds the `tss` group for /dev/tpmrm0.
 * - The agent keeps one capability, CAP_DAC_READ_SEARCH: the kernel's IMA list and the firmware
 *   event log in securityfs are readable by root only (mode 0440), and attest's agent re-reads them
 *   on every quote (it does not open them as root and drop privileges as rust-keylime does). Without
 *   it the agent reports no IMA list and no boot log (it treats EACCES as absent) and every runtime
 *   policy fails. The servers keep none.
 * - MemoryDenyWriteExecute= is not set: V8's JIT writes machine code and then maps it executable,
 *   which that filter forbids. Under the kernel's equivalent (prctl PR_SET_MDWE) node 20 aborts in
 *   v8::base::OS::SetPermissions as soon as it compiles a hot function; `node --jitless` runs, but
 *   the hot paths (IMA lines, quote checks) would then be interpreted only.
 * - PrivateUsers= is set for the servers only: a capability held inside a private user namespace
 *   does not act on the host's files, so the agent (reading root's securityfs files) cannot have it.
 * - ProcSubset=pid is not set: node reads /proc/meminfo (sizing its heap) and /proc/uptime
 *   (os.uptime: the agent's boot time), which it would hide.
 * - SystemCallErrorNumber=EPERM: a call outside the allowed set fails instead of killing node, so
 *   libuv falls back (io_uring, for one, is outside @system-service on older systemd).
 */

import type { sections } from "../../src/config/sections.js"

/** One directive's value: a string, or a list written as one line per item. */
export type Directive = string | ReadonlyArray<string>

type Section = "registrar" | "verifier" | "agent"
/** An option of a section, checked by the compiler: renaming it in sections.ts breaks this table. */
type OptionOf<S extends Section> = keyof (typeof sections)[S] & string

interface UnitBase<S extends Section> {
  /** The `attest` subcommand the unit runs, and its unit name `attest-<command>`. */
  readonly command: "registrar" | "verifier" | "agent" | "push-agent"
  /** Its attribute under `services.attest` in the NixOS module. */
  readonly nixName: "registrar" | "verifier" | "agent" | "pushAgent"
  /** The configuration section it reads (src/config/sections.ts). */
  readonly section: S
  readonly description: string
  /** [Unit] ordering and dependencies. */
  readonly after: ReadonlyArray<string>
  readonly wants: ReadonlyArray<string>
  readonly conflicts: ReadonlyArray<string>
  /** Arguments after `--config <file>` (the agents' TPM). */
  readonly args: ReadonlyArray<string>
  /** The agents' tpm2-tools TCTI (`--tcti`; the NixOS module's `tcti` default). */
  readonly tcti?: string
  /** Options holding the ports it listens on (a firewall opens these) and its metrics port. */
  readonly listen: ReadonlyArray<OptionOf<S>>
  readonly metrics: ReadonlyArray<OptionOf<S>>
  /** Options holding directories it may write (paths; `default` and `generate` are not). */
  readonly writable: ReadonlyArray<OptionOf<S>>
  /**
   * The directory under /var/lib the unit writes (its `data_dir` default and, for the servers, the
   * CA directory under it). The NixOS module derives it from the settings instead.
   */
  readonly stateDirectory: string
  /** [Service] directives besides ExecStart, EnvironmentFile and StateDirectory. */
  readonly service: Readonly<Record<string, Directive>>
}

export type UnitSpec = UnitBase<"registrar"> | UnitBase<"verifier"> | UnitBase<"agent">

export const USER = "attest"
/** The device the agents use through tpm2-tools (src/tpm/tpm2tools/call.ts: DEFAULT_TCTI). */
export const TPM_DEVICE = "/dev/tpmrm0"

/** What every unit has: the hardening of the best NixOS services, less what node cannot run under. */
const common: Readonly<Record<string, Directive>> = {
  Type: "exec",
  Restart: "on-failure",
  RestartSec: "5s",
  User: USER,
  Group: USER,
  StateDirectoryMode: "0750",
  UMask: "0077",
  NoNewPrivileges: "yes",
  ProtectSystem: "strict",
  ProtectHome: "yes",
  PrivateTmp: "yes",
  ProtectKernelTunables: "yes",
  ProtectKernelModules: "yes",
  ProtectKernelLogs: "yes",
  ProtectControlGroups: "yes",
  ProtectClock: "yes",
  ProtectHostname: "yes",
  ProtectProc: "invisible",
  RestrictAddressFamilies: "AF_INET AF_INET6 AF_UNIX",
  RestrictNamespaces: "yes",
  RestrictRealtime: "yes",
  RestrictSUIDSGID: "yes",
  LockPersonality: "yes",
  RemoveIPC: "yes",
  PrivateMounts: "yes",
  SystemCallArchitectures: "native",
  SystemCallFilter: ["@system-service", "~@privileged"],
  SystemCallErrorNumber: "EPERM"
}

/** Registrar and verifier: no device, no capability, a private user namespace. */
const server: Readonly<Record<string, Directive>> = {
  ...common,
  PrivateDevices: "yes",
  PrivateUsers: "yes",
  CapabilityBoundingSet: "",
  AmbientCapabilities: ""
}

/** Both agents: the TPM device (tss group), root-only securityfs files read with one capability. */
const agent: Readonly<Record<string, Directive>> = {
  ...common,
  SupplementaryGroups: "tss",
  DevicePolicy: "closed",
  DeviceAllow: `${TPM_DEVICE} rw`,
  CapabilityBoundingSet: "CAP_DAC_READ_SEARCH",
  AmbientCapabilities: "CAP_DAC_READ_SEARCH"
}

const network = ["network-online.target"]
const tpm = { args: ["--tpm", "tpm2-tools"], tcti: `device:${TPM_DEVICE}` }

export const units: ReadonlyArray<UnitSpec> = [
  {
    command: "registrar",
    nixName: "registrar",
    section: "registrar",
    description: "attest registrar (TPM agent registration, Keylime-compatible)",
    // the verifier generates the CA (tls_dir = generate) the registrar's default TLS uses
    after: [...network, "attest-verifier.service"],
    wants: network,
    conflicts: [],
    args: [],
    listen: ["port", "tls_port"],
    metrics: ["metrics_port"],
    writable: ["data_dir", "ca_dir", "tls_dir"],
    stateDirectory: "attest",
    service: server
  },
  {
    command: "verifier",
    nixName: "verifier",
    section: "verifier",
    description: "attest verifier (remote attestation of TPM agents, Keylime-compatible)",
    after: network,
    wants: network,
    conflicts: [],
    args: [],
    listen: ["port"],
    metrics: ["metrics_port"],
    // the EAR signing key is generated in the TLS directory when missing
    writable: ["data_dir", "ca_dir", "tls_dir"],
    stateDirectory: "attest",
    service: server
  },
  {
    command: "agent",
    nixName: "agent",
    section: "agent",
    description: "attest pull agent (answers the verifier's quote requests from this machine's TPM)",
    after: [...network, "attest-registrar.service", "attest-verifier.service"],
    wants: network,
    conflicts: ["attest-push-agent.service"],
    ...tpm,
    listen: ["port"],
    metrics: [],
    writable: ["data_dir"],
    stateDirectory: "attest/agent",
    service: agent
  },
  {
    command: "push-agent",
    nixName: "pushAgent",
    section: "agent",
    description: "attest push agent (sends this machine's TPM evidence to the verifier, API 3.0)",
    after: [...network, "attest-registrar.service", "attest-verifier.service"],
    wants: network,
    conflicts: ["attest-agent.service"],
    ...tpm,
    listen: [],
    metrics: [],
    writable: ["data_dir"],
    stateDirectory: "attest/agent",
    service: agent
  }
]

export const unitName = (u: UnitSpec): string => `attest-${u.command}`
