/** How `attest policy check` runs: the verifier's IMA evaluation over files, one line per failure. */
import { Console, Effect, Either, Option } from "effect"
import type { HashAlg } from "../../tpm/hashAlg.js"
import { hashAlgFromHexLength, isHex } from "../../ima/hash.js"
import { keyringFromPems } from "../../ima/signatures.js"
import { verifyIma } from "../../ima/verify.js"
import { cliFail, readCompiledPolicy, readText, reportErrors } from "./runtimeCommon.js"

export const run = (o: {
  readonly policy: string
  readonly imaList: string
  readonly pcr10: Option.Option<string>
  readonly hashAlg: Option.Option<HashAlg>
  readonly bootAggregate: ReadonlyArray<string>
  readonly imaKey: ReadonlyArray<string>
}) =>
  Effect.gen(function*() {
    const compiled = yield* readCompiledPolicy(o.policy)
    const list = yield* readText(o.imaList)
    const pems: Array<string> = []
    for (const k of o.imaKey) pems.push(yield* readText(k))
    const keyring = keyringFromPems(pems)
    if (Either.isLeft(keyring)) return yield* cliFail(`--ima-key: ${keyring.left}`)
    for (const b of o.bootAggregate) if (!isHex(b.slice(b.indexOf(":") + 1))) return yield* cliFail(`--boot-aggregate '${b}' is not hex`)

    let bank: HashAlg = Option.getOrElse(o.hashAlg, () => "sha256" as const)
    let quoted: Partial<Record<HashAlg, Uint8Array>> = {}
    if (Option.isSome(o.pcr10)) {
      const hex = o.pcr10.value.toLowerCase().replace(/^0x/, "")
      const fromLen = hashAlgFromHexLength(hex.length)
      if (!isHex(hex) || fromLen === undefined) return yield* cliFail(`--pcr10 must be a sha1/sha256/sha384/sha512 digest in hex`)
      if (Option.isSome(o.hashAlg) && o.hashAlg.value !== fromLen) {
        return yield* cliFail(`--pcr10 has ${hex.length} hex digits, which is not a ${o.hashAlg.value} value`)
      }
      bank = fromLen
      quoted = { [bank]: new Uint8Array(Buffer.from(hex, "hex")) }
    }

    const r = verifyIma({ list, startEntry: 0, policy: compiled, quotedPcr10: quoted, banks: [bank], bootAggregates: o.bootAggregate, keyring: keyring.right })
    for (const f of r.failures) {
      const where = f.context.line === undefined ? "list" : `entry ${f.context.line}`
      yield* Console.log(`FAIL ${where}${f.context.path === undefined ? "" : ` ${f.context.path}`}: ${f.context.message} [${f.type}]`)
    }
    const pcr = `PCR 10 ${bank} = ${r.pcrs[bank] ?? ""}`
    if (r.failures.length > 0) {
      return yield* cliFail(`${r.failures.length} failure(s) in ${r.entries} entries; ${pcr}`)
    }
    const matched = Option.isNone(o.pcr10)
      ? ""
      : r.matchedEntries === 0 && r.entries > 0
        ? ", but the quoted PCR 10 is the value before entry 1: it covers none of the entries"
        : `, quoted PCR 10 matched after entry ${r.matchedEntries}`
    yield* Console.log(`PASS: ${r.entries} entries${matched}; ${pcr}`)
  }).pipe(reportErrors("check"))
