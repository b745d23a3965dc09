/**
 * IMA verification: replay the measurement list into PCR 10, recompute every template hash, and
 * evaluate the runtime policy exactly as Keylime's `_process_measurement_list` does (keylime-wire.md
 * §3.3), starting from the agent's incremental state. One tight loop over the list text: no per-entry
 * Effect, one reused template buffer, one-shot hashes.
 */
import { cryptoPort } from "../crypto/active.js"
import { latin1 } from "../crypto/encoding.js"
import type { PublicKey } from "../crypto/port.js"
import { digestHexOf, emptyFields, nameOf, HEX_VALUE, parseLineInto, TemplateBuffer } from "./entry.js"
import { failure, FailureType, type ImaFailure } from "./failure.js"
import { digestSize, type HashAlg, hashAlgFromHexLength } from "./hash.js"
import { NameTable } from "./nameTable.js"
import type { CompiledPolicy, DigestLookup } from "./policy.js"
import { ImaKeyring, isSupportedKey, publicKeyFrom } from "./signatures.js"
import { decideStart, type ImaState, initialImaState } from "./state.js"

export interface ImaVerificationInput {
  /** The list text as the agent sent it, starting at entry `startEntry`. */
  readonly list: string
  /** `ima_measurement_list_entry`: index of the first line of `list` in the agent's whole list. */
  readonly startEntry: number
  /** State persisted after the previous round (undefined: none yet). */
  readonly state?: ImaState | undefined
  /** The compiled runtime policy; undefined checks only template hashes and PCR 10. */
  readonly policy?: CompiledPolicy | undefined
  /** Quoted PCR 10 per bank. Empty: no quote (offline check), every entry is accepted. */
  readonly quotedPcr10?: Partial<Record<HashAlg, Uint8Array>>
  /** Banks to replay when there is no quote (default sha256). */
  readonly banks?: ReadonlyArray<HashAlg>
  /** Extra allowed boot_aggregate digests (hex), e.g. from the measured-boot log (8- and 10-PCR variants). */
  readonly bootAggregates?: ReadonlyArray<string>
  /** The tenant's `ima_sign_verification_keys`. */
  readonly keyring?: ImaKeyring | undefined
  /** The agent's reported boot time. */
  readonly bootTime?: number | null
  /** Report ToMToU entries as `ima.validation.tomtou` (Keylime's default config does not). */
  readonly tomtouFailures?: boolean
}

export interface ImaVerificationResult {
  readonly failures: ReadonlyArray<ImaFailure>
  /** State to persist: advanced to the quote's match, or reset after any failure (as Keylime does). */
  readonly state: ImaState
  /** Entries of `list` covered by the quote (accepted this round); the rest wait for the next round. */
  readonly matchedEntries: number
  /** Non-empty lines in `list`. */
  readonly entries: number
  /** PCR 10 per bank after the whole list (hex). */
  readonly pcrs: Partial<Record<HashAlg, string>>
  /** Boot time changed mid-way: nothing evaluated; ask again from entry 0. */
  readonly retry: boolean
}

// Imported bindings the loop uses, read once: where modules load as CommonJS (tsx, under which the
// benches and tools run), each read of one is a getter call, per entry here.
const HEX = HEX_VALUE
const parseLine = parseLineInto
const nibble = (c: number): number => HEX[c]!

/** Lower-case hex character codes of each byte's high and low nibble. */
const HEX_HI = new Uint16Array(256)
const HEX_LO = new Uint16Array(256)
for (let b = 0; b < 256; b++) {
  HEX_HI[b] = "0123456789abcdef".charCodeAt(b >> 4)
  HEX_LO[b] = "0123456789abcdef".charCodeAt(b & 15)
}

/**
 * text[at, at + 2·d.length) is the hex of the digest d (latin1: one byte per character), either case;
 * no slicing or decoding. The kernel prints lower case: compare character codes, and decode only if
 * that fails (upper case or a mismatch).
 */
const hexEquals = (text: string, at: number, d: string): boolean => {
  for (let i = 0; i < d.length; i++) {
    const b = d.charCodeAt(i)
    if (text.charCodeAt(at + 2 * i) !== HEX_HI[b] || text.charCodeAt(at + 2 * i + 1) !== HEX_LO[b]) return hexDecodedEquals(text, at, d, i)
  }
  return true
}

const hexDecodedEquals = (text: string, at: number, d: string, from: number): boolean => {
  for (let i = from; i < d.length; i++) {
    if (((nibble(text.charCodeAt(at + 2 * i)) << 4) | nibble(text.charCodeAt(at + 2 * i + 1))) !== d.charCodeAt(i)) return false
  }
  return true
}

/**
 * Digest form changes for the state's PCRs (a few per call): plain loops over a reused code array,
 * not Buffer round trips, which cost more than a 10-entry round's parsing.
 */
const codes: Array<number> = []
const latin1OfHex = (hex: string): string => {
  codes.length = hex.length >> 1
  for (let i = 0; i < codes.length; i++) codes[i] = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1))
  return String.fromCharCode.apply(null, codes)
}
const hexOfLatin1 = (s: string): string => {
  codes.length = 2 * s.length
  for (let i = 0; i < s.length; i++) {
    const b = s.charCodeAt(i)
    codes[2 * i] = HEX_HI[b]!
    codes[2 * i + 1] = HEX_LO[b]!
  }
  return String.fromCharCode.apply(null, codes)
}

/**
 * One template buffer for every call: verifyIma is synchronous and calls nothing that evaluates
 * another list, so the scratch (and its cached views) outlives a call instead of being allocated by each.
 */
let scratch = new TemplateBuffer()
/** A buffer grown past this for one long line (an ima-buf of a big key, say) is dropped after the call. */
const SCRATCH_KEEP = 64 * 1024

const isHexRange = (s: string, a: number, b: number): boolean => {
  for (let i = a; i < b; i++) if (nibble(s.charCodeAt(i)) < 0) return false
  return true
}

const isZeros = (s: string, a: number, b: number): boolean => {
  for (let i = a; i < b; i++) if (s.charCodeAt(i) !== 48) return false
  return true
}

export const verifyIma = (input: ImaVerificationInput): ImaVerificationResult => {
  const decision = decideStart(input.state, input.startEntry, input.bootTime)
  if (decision._tag !== "Continue") {
    return {
      failures: decision._tag === "Reject" ? [decision.failure] : [],
      state: decision.state,
      matchedEntries: 0,
      entries: 0,
      pcrs: {},
      retry: decision._tag === "Retry"
    }
  }
  const start = decision.state
  const quoted = input.quotedPcr10 ?? {}
  const quotedBanks = (Object.keys(quoted) as Array<HashAlg>).filter((b) => quoted[b] !== undefined)
  const banks: ReadonlyArray<HashAlg> = quotedBanks.length > 0 ? quotedBanks : (input.banks ?? ["sha256"])
  // A state without the quoted bank cannot continue mid-list: start over.
  if (start.nextEntry > 0 && banks.some((b) => start.pcrs[b] === undefined)) {
    return { failures: [], state: initialImaState(start.bootTime), matchedEntries: 0, entries: 0, pcrs: {}, retry: true }
  }

  const nb = banks.length
  // Digests are latin1 strings (one char per byte): node's crypto.hash returns those several times
  // cheaper than a Buffer (no ArrayBuffer per call), and PCR comparisons become string equality.
  const hashLatin1 = cryptoPort().digestLatin1
  const running: Array<string> = banks.map((b) => {
    const v = start.pcrs[b]
    return v === undefined ? "\0".repeat(digestSize(b)) : latin1OfHex(v)
  })
  const sizes = banks.map(digestSize)
  const extendBufs = sizes.map((n) => new Uint8Array(2 * n))
  const ff = sizes.map((n) => "\xff".repeat(n))
  const pths: Array<string> = ff.slice()
  const targets: Array<string | undefined> = banks.map((b) => {
    const q = quoted[b]
    return q === undefined ? undefined : latin1(q)
  })
  const allMatch = (): boolean => {
    for (let i = 0; i < nb; i++) if (running[i] !== targets[i]) return false
    return true
  }

  const policy = input.policy
  const logAlg: HashAlg = policy?.logHashAlg ?? "sha1"
  const logHexLen = 2 * digestSize(logAlg)
  // The tenant's and the policy's keys are looked up in place, not copied, and learned keys are
  // restored from a cache of parsed keys: a round's set-up does not depend on how many keys there are.
  const keyring = ImaKeyring.over(input.keyring, policy?.verificationKeys)
  for (const l of start.learnedKeys) keyring.restore(l.keyring, l.der)
  const extraBoot = new Set((input.bootAggregates ?? []).map((d) => d.slice(d.indexOf(":") + 1).toLowerCase()))

  const failures: Array<ImaFailure> = []
  let found = quotedBanks.length === 0 || allMatch()
  const foundAtStart = found
  let matchCount = 0
  let matchPcrs: Array<string> = []
  let matchLearned = keyring.learned.length

  const tb = scratch
  const f = emptyFields()
  const text = input.list
  let count = 0
  let pos = 0

  /** Keylime `_validate_ima_ng` against one of the policy's maps; returns true when it passes. */
  const checkNg = (map: DigestLookup, line: number): boolean => {
    if (policy === undefined) return true
    // The usual case, a listed digest, is a hash probe and a byte compare with the decoded entry
    // digest: no string is cut from the list. An allowed digest passes whether or not the path is
    // excluded, so the exclude RegExp runs on misses only.
    const row = map.lookupRow(text, f.nameStart, f.nameEnd, f.nameHash)
    if (row >= 0 && map.allows(row, tb.buf, f.digestStart, f.digestLength)) return true
    const name = nameOf(text, f)
    if (policy.exclude !== undefined && policy.exclude.test(name)) return true
    const hex = digestHexOf(text, f).toLowerCase()
    if (row < 0 && !(name === "boot_aggregate" && extraBoot.size > 0 && map === policy.digests)) {
      failures.push(failure(FailureType.notInAllowlist, `File not found in allowlist: ${name} (entry ${line})`, line, name))
      return false
    }
    if (name === "boot_aggregate" && extraBoot.has(hex)) return true
    failures.push(
      failure(FailureType.runtimePolicyHash, `Hash not found in runtime policy: ${name} has ${f.digestAlg}:${hex} (entry ${line})`, line, name)
    )
    return false
  }

  while (pos <= text.length) {
    let nl = text.indexOf("\n", pos)
    if (nl < 0) nl = text.length
    if (nl === pos) {
      pos = nl + 1
      continue
    }
    const lineStart = pos
    pos = nl + 1
    count++
    const lineNo = input.startEntry + count
    // Column 2's hex is checked only when it does not match (below): saves a pass over every line.
    let reason = parseLine(text, lineStart, nl, tb, f, false)
    // A plain view is cheaper to make than Buffer#subarray; the digest takes any Uint8Array.
    const data = reason === undefined ? tb.view(f.length) : undefined
    const thLen = f.thEnd - f.thStart
    const tomtou = data !== undefined && text.charCodeAt(f.thStart) === 48 && isZeros(text, f.thStart, f.thEnd)
    // Column 2 is hashed with the policy's log_hash_alg; a column of another digest length (e.g. the
    // kernel's ascii_runtime_measurements_sha256) is checked with the algorithm of that length.
    const thAlg = thLen === logHexLen ? logAlg : hashAlgFromHexLength(thLen)
    let thDigest: string | undefined
    let hashOk = false
    if (data !== undefined) {
      for (let i = 0; i < nb; i++) {
        if (tomtou) pths[i] = ff[i]!
        else {
          const pth = hashLatin1(banks[i]!, data)
          pths[i] = pth
          if (banks[i] === thAlg) thDigest = pth
        }
      }
      if (!tomtou && thAlg !== undefined) {
        thDigest ??= hashLatin1(thAlg, data)
        hashOk = hexEquals(text, f.thStart, thDigest)
      }
      if (!tomtou && !hashOk && !isHexRange(text, f.thStart, f.thEnd)) reason = `template hash '${text.slice(f.thStart, f.thEnd)}' is not hex`
    }
    if (reason !== undefined) {
      // Keylime: an unparsable line is reported and not extended.
      const shown = text.slice(lineStart, Math.min(nl, lineStart + 200))
      failures.push(failure(FailureType.parserEntry, `Line was not parsable into a valid IMA entry (entry ${lineNo}): ${reason}: ${shown}`, lineNo))
      continue
    }
    for (let i = 0; i < nb; i++) {
      const eb = extendBufs[i]!
      const r = running[i]!
      const p = pths[i]!
      const n = sizes[i]!
      // 20–64 bytes: a JS loop is cheaper than Buffer#write's call overhead
      for (let k = 0; k < n; k++) {
        eb[k] = r.charCodeAt(k)
        eb[n + k] = p.charCodeAt(k)
      }
      running[i] = hashLatin1(banks[i]!, eb)
    }
    let valid = true
    if (f.pcrEnd - f.pcrStart !== 2 || text.charCodeAt(f.pcrStart) !== 49 || text.charCodeAt(f.pcrStart + 1) !== 48) {
      const pcr = text.slice(f.pcrStart, f.pcrEnd)
      failures.push(failure(FailureType.imaPcr, `IMA PCR is not the configured one: expected 10, got ${pcr} (entry ${lineNo}: ${nameOf(text, f)})`, lineNo, nameOf(text, f)))
      valid = false
    }
    if (tomtou) {
      if (input.tomtouFailures === true) {
        failures.push(failure(FailureType.tomtou, `hash validation was skipped (ToMToU/violation entry ${lineNo}: ${nameOf(text, f)})`, lineNo, nameOf(text, f)))
      }
      valid = false
    } else if (!hashOk) {
      failures.push(
        failure(FailureType.imaHash, `IMA template hash does not match the calculated hash (entry ${lineNo}: ${nameOf(text, f)})`, lineNo, nameOf(text, f))
      )
      valid = false
    }
    if (valid) {
      switch (f.template) {
        case "ima":
        case "ima-ng":
          checkNg(policy?.digests ?? emptyMap, lineNo)
          break
        case "ima-sig":
          validateSig(lineNo)
          break
        case "ima-buf":
          validateBuf(lineNo)
          break
      }
    }
    if (!found && allMatch()) {
      found = true
      matchCount = count
      matchPcrs = running.map(hexOfLatin1)
      matchLearned = keyring.learned.length
    }
  }

  function validateSig(lineNo: number): void {
    const name = nameOf(text, f)
    if (keyring.size > 0 && f.extraLength > 0) {
      if (policy?.exclude !== undefined && policy.exclude.test(name)) return
      const sig = tb.buf.subarray(f.extraStart, f.extraStart + f.extraLength)
      const digest = tb.buf.subarray(f.digestStart, f.digestStart + f.digestLength)
      if (keyring.verify(sig, digest)) return
    }
    if (policy !== undefined) {
      checkNg(policy.digests, lineNo)
      return
    }
    if (keyring.size === 0) return
    failures.push(failure(FailureType.invalidSignature, `signature for file ${name} could not be validated (entry ${lineNo})`, lineNo, name))
  }

  function validateBuf(lineNo: number): void {
    const name = nameOf(text, f)
    const buf = tb.buf.subarray(f.extraStart, f.extraStart + f.extraLength)
    const key: PublicKey | undefined = buf.length > 0 ? publicKeyFrom(buf) : undefined
    if (key !== undefined) {
      if (!isSupportedKey(key)) {
        failures.push(failure(FailureType.invalidKey, `key from ${name} does not have a supported key type (entry ${lineNo})`, lineNo, name))
        return
      }
      const ignored = policy?.ignoredKeyrings
      if (ignored !== undefined && (ignored.has("*") || ignored.has(name))) return
      if (checkNg(policy?.keyrings ?? emptyMap, lineNo)) keyring.learn(name, key)
      return
    }
    checkNg(policy?.imaBuf ?? emptyMap, lineNo)
  }

  if (tb.buf.length > SCRATCH_KEEP) scratch = new TemplateBuffer()

  if (!found) {
    const want = banks.map((b, i) => `${b}:${hexOfLatin1(targets[i] ?? "")}`).join(", ")
    failures.push(failure(FailureType.pcrMismatch, `IMA measurement list does not match TPM PCR ${want}`))
  }

  const endPcrs: Partial<Record<HashAlg, string>> = {}
  banks.forEach((b, i) => (endPcrs[b] = hexOfLatin1(running[i]!)))
  const learned = (upTo: number) => keyring.learned.slice(0, upTo)

  let state: ImaState
  let matchedEntries: number
  if (failures.length > 0) {
    state = initialImaState(start.bootTime)
    matchedEntries = 0
  } else if (quotedBanks.length === 0) {
    state = { ...start, nextEntry: start.nextEntry + count, pcrs: { ...start.pcrs, ...endPcrs }, learnedKeys: learned(keyring.learned.length) }
    matchedEntries = count
  } else if (foundAtStart) {
    // The quote covers none of the new lines yet: keep the state, they come again next round.
    state = start
    matchedEntries = 0
  } else {
    const pcrs: Partial<Record<HashAlg, string>> = { ...start.pcrs }
    banks.forEach((b, i) => (pcrs[b] = matchPcrs[i]!))
    state = { ...start, nextEntry: start.nextEntry + matchCount, pcrs, learnedKeys: learned(matchLearned) }
    matchedEntries = matchCount
  }
  return { failures, state, matchedEntries, entries: count, pcrs: endPcrs, retry: false }
}

const emptyMap: DigestLookup = NameTable.empty
