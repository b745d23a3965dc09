/** How `attest policy create runtime` runs: digests from a tree, an IMA list and allowlists merged into a v1 policy. */
import { FileSystem } from "@effect/platform"
import * as crypto from "node:crypto"
import { Clock, DateTime, Effect, Either, Option } from "effect"
import { Generator, makeRuntimePolicy } from "../../../schemas/RuntimePolicy.js"
import { addDigest, digestsFromImaList } from "../../ima/digestsFromList.js"
import { parseList } from "../../ima/entry.js"
import { compileExcludes } from "../../ima/policy.js"
import type { HashAlg } from "../../tpm/hashAlg.js"
import { DEFAULT_EXCLUDES } from "./createRuntime.js"
import { cliFail, PolicyCliError, readPolicy, readText, reportErrors, writeOutput } from "./runtimeCommon.js"

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

export const run = (o: {
  readonly rootfs: Option.Option<string>
  readonly imaList: Option.Option<string>
  readonly allowlist: Option.Option<string>
  readonly exclude: ReadonlyArray<string>
  readonly noDefaultExcludes: boolean
  readonly hashAlg: HashAlg
  readonly output: Option.Option<string>
}) =>
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
      digestsFromImaList(parsed.right, digests)
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
