/**
 * `attest policy create runtime`: write a Keylime-compatible runtime policy (v1 JSON) from a directory
 * tree (hashing its files), an IMA measurement list, a legacy allowlist, or any combination.
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import * as crypto from "node:crypto"
import { Clock, DateTime, Effect, Either, Option } from "effect"
import { Generator, makeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import { parseList } from "../../ima/entry.js"
import { compileExcludes } from "../../ima/policy.js"
import { cliFail, hashAlgOption, PolicyCliError, readPolicy, readText, reportErrors, writeOutput } from "./runtimeCommon.js"

/** Pseudo and volatile filesystems: never hashed from a rootfs and excluded at runtime unless --no-default-excludes. */
export const DEFAULT_EXCLUDES = ["/proc/.*", "/sys/.*", "/dev/.*", "/run/.*", "/tmp/.*", "/var/tmp/.*", "/lost\\+found/.*"]

const rootfs = Options.directory("rootfs").pipe(
  Options.withDescription("Directory tree to hash, taken as mounted at / (e.g. a mounted image). Regular files only; symlinks are not followed."),
  Options.optional
)
const imaList = Options.text("ima-list").pipe(
  Options.withDescription("IMA measurement list (ASCII) of a known-good machine; every measured path and digest is allowed, boot_aggregate included."),
  Options.optional
)
const allowlist = Options.text("allowlist").pipe(
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
const output = Options.text("output").pipe(Options.withDescription("Write the policy here instead of stdout."), Options.optional)

const addDigest = (into: Record<string, Array<string>>, path: string, digest: string) => {
  const list = (into[path] ??= [])
  if (!list.includes(digest)) list.push(digest)
}

/** Hash every regular file under `root`, naming it by its path below root. */
const hashTree = (root: string, alg: string, skip: RegExp | undefined) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const fail = (e: { readonly message: string }) => new PolicyCliError({ message: `--rootfs ${root}: ${e.message}` })
    const entries = yield* fs.readDirectory(root, { recursive: true }).pipe(Effect.mapError(fail))
    const digests: Record<string, Array<string>> = {}
    for (const rel of entries.sort()) {
      const path = "/" + rel.split("\\").join("/")
      if (skip !== undefined && skip.test(path)) continue
      const full = `${root}/${rel}`
      const info = yield* fs.stat(full).pipe(Effect.option)
      if (Option.isNone(info) || info.value.type !== "File") continue
      const link = yield* fs.readLink(full).pipe(Effect.option)
      if (Option.isSome(link)) continue
      const bytes = yield* fs.readFile(full).pipe(Effect.mapError(fail))
      addDigest(digests, path, crypto.createHash(alg).update(bytes).digest("hex"))
    }
    return digests
  })

export const createRuntimeCommand = Command.make(
  "runtime",
  { rootfs, imaList, allowlist, exclude, noDefaultExcludes, hashAlg, output },
  (o) =>
    Effect.gen(function*() {
      if (Option.isNone(o.rootfs) && Option.isNone(o.imaList) && Option.isNone(o.allowlist)) {
        return yield* cliFail("give at least one of --rootfs, --ima-list, --allowlist")
      }
      const excludes = [...(o.noDefaultExcludes ? [] : DEFAULT_EXCLUDES), ...o.exclude]
      const compiled = compileExcludes(excludes)
      if (Either.isLeft(compiled)) return yield* cliFail(`--exclude ${compiled.left.reason}`)
      const digests: Record<string, Array<string>> = {}
      const keyrings: Record<string, Array<string>> = {}

      if (Option.isSome(o.allowlist)) {
        const base = yield* readPolicy(o.allowlist.value)
        for (const [p, ds] of Object.entries(base.digests)) for (const d of ds) addDigest(digests, p, d)
        for (const [p, ds] of Object.entries(base.keyrings)) for (const d of ds) addDigest(keyrings, p, d)
        excludes.push(...base.excludes.filter((e) => !excludes.includes(e)))
      }
      if (Option.isSome(o.imaList)) {
        const parsed = parseList(yield* readText(o.imaList.value))
        if (Either.isLeft(parsed)) return yield* cliFail(`${o.imaList.value}: ${parsed.left.message}`)
        for (const e of parsed.right) {
          const hex = Buffer.from(e.digest).toString("hex")
          if (e.template === "ima-buf") {
            continue // buffers (keys, kexec cmdlines) are policy decisions, not measurements to copy
          }
          // Violations (all-zero digests) say nothing about the file.
          if (/^0+$/.test(hex) && e.name !== "boot_aggregate") continue
          addDigest(digests, e.name, hex)
        }
      }
      if (Option.isSome(o.rootfs)) {
        const tree = yield* hashTree(o.rootfs.value, o.hashAlg, compiled.right)
        for (const [p, ds] of Object.entries(tree)) for (const d of ds) addDigest(digests, p, d)
      }
      const now = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
      const timestamp = DateTime.formatIso(now).replace("T", " ").replace("Z", "")
      const policy = makeRuntimePolicy({ digests, keyrings, excludes, generator: Generator.LegacyAllowList, timestamp })
      yield* writeOutput(o.output, JSON.stringify(policy))
    }).pipe(reportErrors("create runtime"))
).pipe(Command.withDescription("Create a runtime (IMA) policy from a directory tree, an IMA list or a legacy allowlist."))
