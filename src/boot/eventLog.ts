/**
 * Parser of TCG event logs. Crypto-agile (TCG PC Client PFP spec §10): the first event in SHA-1
 * format carries the `Spec ID Event03` header with the digest sizes of every bank; the rest are
 * TCG_PCR_EVENT2 records with one digest per bank. Legacy (SHA-1 only, still written by older
 * firmware): every event is a TCG_PCR_EVENT with one SHA-1 digest, so the log feeds the sha1 bank
 * only. Pure, no tpm2-tools process; every read is bounds-checked and failures name the event, the
 * field and the byte offset.
 */
import { Either } from "effect"
import { base64Bytes } from "../crypto/encoding.js"
import { parseWith, Reader } from "../tpm/bytes.js"
import type { TpmParseError } from "../tpm/errors.js"
import { hashAlgFromId, type HashAlg } from "../tpm/hashAlg.js"
import { decodeEventData, type EventData } from "./eventData.js"
import { EventLogParseError } from "./errors.js"
import { EV, eventTypeName } from "./eventTypes.js"

export interface EventDigest {
  readonly algId: number
  /** undefined for banks attest does not replay (e.g. SM3). */
  readonly alg: HashAlg | undefined
  readonly digest: Uint8Array
}

export interface BootEvent {
  /** Position in the log; 0 is the Spec ID header event. */
  readonly index: number
  /** Byte offset of the event in the log. */
  readonly offset: number
  readonly pcr: number
  readonly type: number
  readonly typeName: string
  readonly digests: ReadonlyArray<EventDigest>
  /** The event body (a view into the log). */
  readonly data: Uint8Array
  readonly decoded: EventData
}

export interface LogAlgorithm {
  readonly algId: number
  readonly alg: HashAlg | undefined
  readonly digestSize: number
}

/** `tcg2`: crypto-agile with a Spec ID Event03 header; `sha1`: legacy TCG_PCR_EVENT records only. */
export type EventLogFormat = "tcg2" | "sha1"

export interface EventLog {
  readonly format: EventLogFormat
  readonly algorithms: ReadonlyArray<LogAlgorithm>
  /** All events in log order; in a `tcg2` log event 0 is the Spec ID header (not measured). */
  readonly events: ReadonlyArray<BootEvent>
  /** Locality from a StartupLocality EV_NO_ACTION event; it is PCR 0's initial last byte. */
  readonly startupLocality: number
}

/** Guards against absurd sizes: the largest real events (db/dbx) are a few hundred KB. */
export const MAX_EVENT_SIZE = 16 * 1024 * 1024
const MAX_ALGORITHMS = 16
const SPEC_ID_SIGNATURE = "Spec ID Event03"
const latin1 = new TextDecoder("latin1")

const header = (r: Reader, events: Array<BootEvent>): Array<LogAlgorithm> => {
  const offset = r.offset
  const pcr = r.u32le("PCRIndex")
  const type = r.u32le("EventType")
  const digest = r.bytes(20, "Digest")
  const size = r.u32le("EventSize")
  if (type !== EV.NO_ACTION) r.fail(`the Spec ID Event03 header event has type ${eventTypeName(type)}, not EV_NO_ACTION`, "EventType", offset + 4)
  if (size > r.remaining) r.fail(`EventSize ${size} exceeds the ${r.remaining} bytes left`, "EventSize", offset + 28)
  const bodyAt = r.offset
  const sig = latin1.decode(r.bytes(16, "SpecID.Signature"))
  if (sig !== `${SPEC_ID_SIGNATURE}\0`) r.fail(`signature is not '${SPEC_ID_SIGNATURE}': not a crypto-agile (TCG2) log`, "SpecID.Signature", bodyAt)
  const platformClass = r.u32le("SpecID.platformClass")
  const minor = r.u8("SpecID.specVersionMinor")
  const major = r.u8("SpecID.specVersionMajor")
  const errata = r.u8("SpecID.specErrata")
  const uintnSize = r.u8("SpecID.uintnSize")
  const countAt = r.offset
  const n = r.u32le("SpecID.numberOfAlgorithms")
  if (n === 0 || n > MAX_ALGORITHMS) r.fail(`numberOfAlgorithms ${n} is not in 1..${MAX_ALGORITHMS}`, "SpecID.numberOfAlgorithms", countAt)
  const algorithms: Array<LogAlgorithm> = []
  for (let i = 0; i < n; i++) {
    const algId = r.u16le("SpecID.algorithmId")
    const sizeAt = r.offset
    const digestSize = r.u16le("SpecID.digestSize")
    const alg = hashAlgFromId(algId)
    if (digestSize === 0 || digestSize > 64) r.fail(`digestSize ${digestSize} is not in 1..64`, "SpecID.digestSize", sizeAt)
    if (alg !== undefined && digestSize !== { sha1: 20, sha256: 32, sha384: 48, sha512: 64 }[alg]) {
      r.fail(`digestSize ${digestSize} is wrong for ${alg}`, "SpecID.digestSize", sizeAt)
    }
    algorithms.push({ algId, alg, digestSize })
  }
  const vendorSize = r.u8("SpecID.vendorInfoSize")
  r.bytes(vendorSize, "SpecID.vendorInfo")
  if (r.offset > bodyAt + size) r.fail(`Spec ID event body overruns its EventSize ${size}`, "EventSize", offset + 28)
  r.offset = bodyAt + size
  events.push({
    index: 0,
    offset,
    pcr,
    type,
    typeName: eventTypeName(type),
    digests: [{ algId: 0x0004, alg: "sha1", digest }],
    data: r.data.subarray(bodyAt, bodyAt + size),
    decoded: {
      kind: "specId",
      signature: SPEC_ID_SIGNATURE,
      platformClass,
      specVersion: `${major}.${minor}.${errata}`,
      uintnSize,
      algorithms: algorithms.map((a) => ({ algorithmId: a.algId, digestSize: a.digestSize }))
    }
  })
  return algorithms
}

const SHA1: LogAlgorithm = { algId: 0x0004, alg: "sha1", digestSize: 20 }

/** A crypto-agile log's first event (TCG_PCR_EVENT, body at byte 32) starts with the Spec ID Event03 signature. */
const isCryptoAgile = (b: Uint8Array): boolean => b.length >= 48 && latin1.decode(b.subarray(32, 48)) === `${SPEC_ID_SIGNATURE}\0`

interface ParseState {
  readonly events: Array<BootEvent>
  /** Index of the event being read, for errors. */
  current: number
  locality: number
}

/** EventSize and the event body, shared by both record formats; pushes the event. */
const readBody = (r: Reader, st: ParseState, offset: number, pcr: number, type: number, digests: ReadonlyArray<EventDigest>): void => {
  const sizeAt = r.offset
  const size = r.u32le("EventSize")
  if (size > MAX_EVENT_SIZE || size > r.remaining) {
    r.fail(`EventSize ${size} exceeds the ${Math.min(r.remaining, MAX_EVENT_SIZE)} bytes allowed`, "EventSize", sizeAt)
  }
  if (pcr > 23 && !(type === EV.NO_ACTION)) r.fail(`PCRIndex ${pcr} is not in 0..23`, "PCRIndex", offset)
  const bodyAt = r.offset
  const data = r.data.subarray(bodyAt, bodyAt + size)
  // Decode within the body only: a reader bounded at the body's end, offsets still log offsets.
  const body = new Reader(r.data.subarray(0, bodyAt + size), "event data", bodyAt)
  const decoded = decodeEventData(body, type, size)
  r.offset = bodyAt + size
  if (decoded.kind === "startupLocality" && pcr === 0) st.locality = decoded.locality
  st.events.push({ index: st.current, offset, pcr, type, typeName: eventTypeName(type), digests, data, decoded })
}

/** TCG_PCR_EVENT2 records after the Spec ID header. */
const readCryptoAgile = (r: Reader, st: ParseState): Array<LogAlgorithm> => {
  const algorithms = header(r, st.events)
  const byId = new Map(algorithms.map((a) => [a.algId, a]))
  while (r.remaining > 0) {
    st.current = st.events.length
    const offset = r.offset
    const pcr = r.u32le("PCRIndex")
    const type = r.u32le("EventType")
    const countAt = r.offset
    const count = r.u32le("DigestCount")
    if (count > algorithms.length) r.fail(`DigestCount ${count} exceeds the ${algorithms.length} banks of the Spec ID header`, "DigestCount", countAt)
    const digests: Array<EventDigest> = []
    for (let i = 0; i < count; i++) {
      const idAt = r.offset
      const algId = r.u16le("Digests.AlgorithmId")
      const a = byId.get(algId)
      if (a === undefined) r.fail(`algorithm 0x${algId.toString(16)} is not in the Spec ID header`, "Digests.AlgorithmId", idAt)
      digests.push({ algId, alg: a.alg, digest: r.bytes(a.digestSize, "Digests.Digest") })
    }
    readBody(r, st, offset, pcr, type, digests)
  }
  return algorithms
}

/** Legacy SHA-1 log: TCG_PCR_EVENT records (PCRIndex, EventType, SHA-1 Digest, EventSize, Event) from the first byte. */
const readLegacy = (r: Reader, st: ParseState): Array<LogAlgorithm> => {
  while (r.remaining > 0) {
    st.current = st.events.length
    const offset = r.offset
    const pcr = r.u32le("PCRIndex")
    const type = r.u32le("EventType")
    const digest = r.bytes(20, "Digest")
    readBody(r, st, offset, pcr, type, [{ algId: SHA1.algId, alg: "sha1", digest }])
  }
  return [SHA1]
}

/**
 * Parses a binary event log: crypto-agile when the first event carries the Spec ID Event03
 * header, otherwise a legacy SHA-1 log.
 */
export const parseEventLog = (bytes: Uint8Array): Either.Either<EventLog, EventLogParseError> => {
  if (bytes.length === 0) return Either.left(new EventLogParseError({ eventIndex: -1, field: "log", offset: 0, reason: "the event log is empty" }))
  const format: EventLogFormat = isCryptoAgile(bytes) ? "tcg2" : "sha1"
  const st: ParseState = { events: [], current: 0, locality: 0 }
  const result = parseWith("log", bytes, (r: Reader) => (format === "tcg2" ? readCryptoAgile(r, st) : readLegacy(r, st)))
  return Either.match(result, {
    onLeft: (e: TpmParseError) =>
      Either.left(new EventLogParseError({ eventIndex: st.events.length === 0 ? 0 : st.current, field: e.structure, offset: e.offset, reason: e.message })),
    onRight: (algorithms) => Either.right({ format, algorithms, events: st.events, startupLocality: st.locality })
  })
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Decodes the agent's `mb_measurement_list` (base64 of the binary log), then parses it. */
export const parseEventLogBase64 = (text: string): Either.Either<EventLog, EventLogParseError> => {
  const clean = text.replace(/\s+/g, "")
  if (clean.length % 4 !== 0 || !BASE64.test(clean)) {
    return Either.left(new EventLogParseError({ eventIndex: -1, field: "base64", offset: 0, reason: "the measured boot log is not valid base64" }))
  }
  return parseEventLog(base64Bytes(clean))
}

/**
 * File input of the CLI: binary logs start with PCR 0 (four zero bytes); anything else is taken
 * as base64 text, as the agent sends it.
 */
export const parseEventLogInput = (bytes: Uint8Array): Either.Either<EventLog, EventLogParseError> => {
  if (bytes.length >= 4 && bytes[0] !== 0) {
    let ascii = true
    for (let i = 0; i < bytes.length && ascii; i++) ascii = bytes[i]! < 0x80
    if (ascii) return parseEventLogBase64(new TextDecoder().decode(bytes))
  }
  return parseEventLog(bytes)
}
