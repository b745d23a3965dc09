/** A list option whose items are drawn from a fixed set (e.g. notifier names). */
import { ParseResult, Schema } from "effect"
import { type OptionSpec, stringList } from "./option.js"

/** Same input forms as `stringList` (TOML array, JSON/Python list, comma-separated); unknown items refused. */
export const literalList = <const L extends ReadonlyArray<string>>(
  values: L,
  def: ReadonlyArray<L[number]>,
  doc: string
): OptionSpec<ReadonlyArray<L[number]>> => ({
  schema: Schema.transformOrFail(stringList(def, doc).schema, Schema.Array(Schema.Literal(...values)), {
    strict: true,
    decode: (items, _, ast) => {
      const bad = items.find((x) => !values.includes(x))
      return bad === undefined
        ? ParseResult.succeed(items as ReadonlyArray<L[number]>)
        : ParseResult.fail(new ParseResult.Type(ast, items, `${JSON.stringify(bad)} is not one of ${values.join(", ")}`))
    },
    encode: ParseResult.succeed
  }),
  default: def,
  doc,
  type: { kind: "list", values }
})
