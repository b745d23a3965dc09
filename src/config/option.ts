/**
 * One configuration option: a Schema from the raw value (an environment string or a TOML value)
 * to its typed value, a default, and a one-line description. The same table drives decoding,
 * `attest config show` and error messages.
 */
import { Either, ParseResult, Schema } from "effect"
import type { TomlValue } from "./toml.js"

export type RawValue = TomlValue

/**
 * What an option holds, for generators that describe the table in another language (the NixOS
 * module's option types: scripts/nix). It states what the decoder below accepts; it decodes nothing.
 */
export type OptionType =
  | { readonly kind: "string" }
  | { readonly kind: "integer"; readonly min?: number; readonly max?: number }
  | { readonly kind: "seconds"; readonly orWord?: string }
  | { readonly kind: "boolean" }
  | { readonly kind: "literal"; readonly values: ReadonlyArray<string> }
  | { readonly kind: "list"; readonly values?: ReadonlyArray<string> }

export interface OptionSpec<A> {
  readonly schema: Schema.Schema<A, RawValue>
  readonly default: A
  readonly doc: string
  readonly type: OptionType
}

export type SectionSpec = Readonly<Record<string, OptionSpec<any>>>
export type SectionValues<S extends SectionSpec> = { readonly [K in keyof S]: S[K] extends OptionSpec<infer A> ? A : never }

const Raw: Schema.Schema<RawValue> = Schema.Union(
  Schema.String,
  Schema.Number,
  Schema.Boolean,
  Schema.Array(Schema.suspend((): Schema.Schema<RawValue> => Raw)),
  // a nested TOML table reaches the option's decoder, which names what it expected
  Schema.Record({ key: Schema.String, value: Schema.suspend((): Schema.Schema<RawValue> => Raw) })
)

/** A Schema from a raw value, with a decode that returns the reason a person reads. */
const fromRaw = <A>(
  decode: (raw: RawValue) => Either.Either<A, string>,
  encode: (a: A) => RawValue,
  to: Schema.Schema<A>
): Schema.Schema<A, RawValue> =>
  Schema.transformOrFail(Raw, to, {
    strict: true,
    decode: (raw, _, ast) => Either.mapLeft(decode(raw), (message) => new ParseResult.Type(ast, raw, message)),
    encode: (a) => ParseResult.succeed(encode(a))
  })

const show = (raw: RawValue): string => JSON.stringify(raw)

export const string = (def: string, doc: string): OptionSpec<string> => ({
  schema: fromRaw(
    (raw) => (typeof raw === "string" ? Either.right(raw) : Either.left(`expected a string, got ${show(raw)}`)),
    (a) => a,
    Schema.String
  ),
  default: def,
  doc,
  type: { kind: "string" }
})

const toNumber = (raw: RawValue): number | undefined =>
  typeof raw === "number" ? raw : typeof raw === "string" && raw.trim() !== "" && !isNaN(Number(raw)) ? Number(raw) : undefined

export const integer = (def: number, doc: string, range: { min?: number; max?: number } = {}): OptionSpec<number> => ({
  schema: fromRaw(
    (raw) => {
      const n = toNumber(raw)
      if (n === undefined || !Number.isSafeInteger(n)) return Either.left(`expected an integer, got ${show(raw)}`)
      if (range.min !== undefined && n < range.min) return Either.left(`must be at least ${range.min}, got ${n}`)
      if (range.max !== undefined && n > range.max) return Either.left(`must be at most ${range.max}, got ${n}`)
      return Either.right(n)
    },
    (a) => a,
    Schema.Int
  ),
  default: def,
  doc,
  type: { kind: "integer", ...range }
})

export const port = (def: number, doc: string): OptionSpec<number> => integer(def, doc, { min: 0, max: 65535 })

/** Non-negative seconds (Keylime's intervals are floats such as 2 or 0.5). */
export const seconds = (def: number, doc: string): OptionSpec<number> => ({
  schema: fromRaw(
    (raw) => {
      const n = toNumber(raw)
      if (n === undefined || !Number.isFinite(n)) return Either.left(`expected a number of seconds, got ${show(raw)}`)
      if (n < 0) return Either.left(`must not be negative, got ${n}`)
      return Either.right(n)
    },
    (a) => a,
    Schema.Number
  ),
  default: def,
  doc,
  type: { kind: "seconds" }
})

/**
 * Non-negative seconds, or a word whose meaning the program works out from other options (e.g.
 * "auto": a value that depends on the mode), so a file that leaves the default keeps it whatever
 * the mode (a generated file writes every default out).
 */
export const secondsOr = <const W extends string>(word: W, def: number | W, doc: string): OptionSpec<number | W> => {
  const plain = seconds(0, doc)
  return {
    schema: fromRaw(
      (raw) =>
        raw === word
          ? Either.right(word)
          : Either.mapLeft(Schema.decodeUnknownEither(plain.schema)(raw), () =>
            typeof raw === "string" || typeof raw === "number" ? `expected a number of seconds (not negative) or "${word}", got ${show(raw)}` : `expected a number of seconds or "${word}", got ${show(raw)}`),
      (a) => a,
      Schema.Union(Schema.Number, Schema.Literal(word))
    ),
    default: def,
    doc,
    type: { kind: "seconds", orWord: word }
  }
}

const TRUE = new Set(["true", "yes", "on", "1"])
const FALSE = new Set(["false", "no", "off", "0"])

/** Booleans; strings as Python's configparser reads them (Keylime configs use True/False). */
export const boolean = (def: boolean, doc: string): OptionSpec<boolean> => ({
  schema: fromRaw(
    (raw) => {
      if (typeof raw === "boolean") return Either.right(raw)
      if (typeof raw === "string" && TRUE.has(raw.toLowerCase())) return Either.right(true)
      if (typeof raw === "string" && FALSE.has(raw.toLowerCase())) return Either.right(false)
      return Either.left(`expected true or false, got ${show(raw)}`)
    },
    (a) => a,
    Schema.Boolean
  ),
  default: def,
  doc,
  type: { kind: "boolean" }
})

export const literal = <const L extends ReadonlyArray<string>>(values: L, def: L[number], doc: string): OptionSpec<L[number]> => ({
  schema: fromRaw(
    (raw) =>
      typeof raw === "string" && values.includes(raw)
        ? Either.right(raw as L[number])
        : Either.left(`expected one of ${values.join(", ")}, got ${show(raw)}`),
    (a) => a,
    Schema.Literal(...values)
  ),
  default: def,
  doc,
  type: { kind: "literal", values }
})

/**
 * A list of strings: a TOML array, or a string that is either a JSON/Python list
 * (`["a", 'b']`, as Keylime writes them) or comma-separated (`a,b`, handy in the environment).
 */
export const stringList = (def: ReadonlyArray<string>, doc: string): OptionSpec<ReadonlyArray<string>> => ({
  schema: fromRaw(
    (raw) => {
      if (Array.isArray(raw)) {
        return raw.every((x) => typeof x === "string")
          ? Either.right(raw as ReadonlyArray<string>)
          : Either.left(`expected a list of strings, got ${show(raw)}`)
      }
      if (typeof raw !== "string") return Either.left(`expected a list of strings, got ${show(raw)}`)
      const t = raw.trim()
      if (t === "" || t === "[]") return Either.right([])
      if (t.startsWith("[")) {
        const items = /^\[\s*(?:(["'])(.*?)\1\s*(?:,\s*(["'])(.*?)\3\s*)*)?,?\s*\]$/s.test(t)
          ? [...t.matchAll(/(["'])(.*?)\1/g)].map((m) => m[2] ?? "")
          : undefined
        return items ? Either.right(items) : Either.left(`expected a list such as ["a", "b"], got ${show(raw)}`)
      }
      return Either.right(t.split(",").map((s) => s.trim()).filter((s) => s !== ""))
    },
    (a) => [...a],
    Schema.Array(Schema.String)
  ),
  default: def,
  doc,
  type: { kind: "list" }
})

/** The reason text of a decode failure (the message our decoders put in). */
export const reasonOf = (e: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(e).map((i) => i.message).join("; ")
