/**
 * `attest policy create runtime`: write a Keylime-compatible runtime policy (v1 JSON) from a directory
 * tree (hashing its files), an IMA measurement list, a legacy allowlist, or any combination.
 */
import { Command, Options } from "@effect/cli"
import { lazy } from "../lazy.js"
import { hashAlgOption } from "./options.js"

/** Pseudo and volatile filesystems: never hashed from a rootfs and excluded at runtime unless --no-default-excludes. */
export const DEFAULT_EXCLUDES = ["/proc/.*", "/sys/.*", "/dev/.*", "/run/.*", "/tmp/.*", "/var/tmp/.*", "/lost\\+found/.*"]

const rootfs = Options.directory("rootfs", { exists: "yes" }).pipe(
  Options.withDescription("Directory tree to hash, taken as mounted at / (e.g. a mounted image). Regular files only; symlinks are not followed."),
  Options.optional
)
const imaList = Options.file("ima-list", { exists: "yes" }).pipe(
  Options.withDescription("IMA measurement list (ASCII) of a known-good machine; every measured path and digest is allowed, boot_aggregate included."),
  Options.optional
)
const allowlist = Options.file("allowlist", { exists: "yes" }).pipe(
  Options.withDescription("Legacy allowlist ('<digest>  <path>' lines), old JSON allowlist, or an existing v1 policy to merge in."),
  Options.optional
)
const exclude = Options.text("exclude").pipe(
  Options.withDescription("Regular expression for paths to skip at runtime (matched at the start of the path). Repeatable."),
  Options.repeated
)
const noDefaultExcludes = Options.boolean("no-default-excludes").pipe(
  Options.withDescription(`Do not add the default excludes (${DEFAULT_EXCLUDES.join(" ")}).`)
)
const hashAlg = hashAlgOption("Digest algorithm for files hashed from --rootfs; use the kernel's ima_hash (default sha256).").pipe(
  Options.withDefault("sha256" as const)
)
const output = Options.file("output").pipe(Options.withDescription("Write the policy here instead of stdout."), Options.optional)

export const createRuntimeCommand = Command.make(
  "runtime",
  { rootfs, imaList, allowlist, exclude, noDefaultExcludes, hashAlg, output },
  lazy(() => import("./createRuntime.run.js"), (m) => m.run)
).pipe(Command.withDescription("Create a runtime (IMA) policy from a directory tree, an IMA list or a legacy allowlist."))
