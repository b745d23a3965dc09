/** Input generators the fuzz targets share: bytes and text near valid samples, junk JSON. */
import { FastCheck as fc } from "effect"

type Mutation = (b: Uint8Array) => Uint8Array

const mutation = (size: number): fc.Arbitrary<Mutation> =>
  fc.oneof(
    // flip one bit
    fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })).map(([at, bit]): Mutation => (b) => {
      if (b.length === 0) return b
      const c = new Uint8Array(b)
      c[at % c.length]! ^= 1 << bit
      return c
    }),
    // set one byte (0, 0xff and small lengths are the interesting ones)
    fc.tuple(fc.nat(), fc.oneof(fc.constantFrom(0, 1, 0x7f, 0x80, 0xff), fc.integer({ min: 0, max: 255 }))).map(([at, v]): Mutation => (b) => {
      if (b.length === 0) return b
      const c = new Uint8Array(b)
      c[at % c.length] = v
      return c
    }),
    // truncate
    fc.nat().map((n): Mutation => (b) => b.subarray(0, b.length === 0 ? 0 : n % b.length)),
    // insert or append random bytes
    fc.tuple(fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 16 })).map(([at, ins]): Mutation => (b) => {
      const i = b.length === 0 ? 0 : at % (b.length + 1)
      return new Uint8Array([...b.subarray(0, i), ...ins, ...b.subarray(i)])
    }),
    // delete a run
    fc.tuple(fc.nat(), fc.integer({ min: 1, max: 16 })).map(([at, n]): Mutation => (b) => {
      if (b.length === 0) return b
      const i = at % b.length
      return new Uint8Array([...b.subarray(0, i), ...b.subarray(i + n)])
    }),
    // a 16- or 32-bit big-endian field set to a large or zero value (sizes and counts)
    fc.tuple(fc.nat(), fc.constantFrom(0, 0xffff, 0xffffffff, size, size + 1)).map(([at, v]): Mutation => (b) => {
      if (b.length < 4) return b
      const c = new Uint8Array(b)
      new DataView(c.buffer, c.byteOffset, c.byteLength).setUint32(at % (c.length - 3), v >>> 0)
      return c
    })
  )

/** Random bytes, or a valid sample changed by one to four mutations. */
export const bytesNear = (samples: ReadonlyArray<Uint8Array>, maxRandom = 512): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: maxRandom }) },
    {
      weight: 4,
      arbitrary: fc.tuple(fc.constantFrom(...samples), fc.array(mutation(samples[0]?.length ?? 0), { minLength: 1, maxLength: 4 })).map(
        ([s, ms]): Uint8Array => ms.reduce((b: Uint8Array, m: Mutation) => m(b), new Uint8Array(s))
      )
    }
  )

const utf8 = new TextEncoder()
const text = new TextDecoder("utf-8", { fatal: false })

/** Random text, or a valid text sample changed bytewise (decoded leniently back to text). */
export const textNear = (samples: ReadonlyArray<string>, maxRandom = 512): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.string({ maxLength: maxRandom, unit: "binary" }) },
    { weight: 4, arbitrary: bytesNear(samples.map((s) => utf8.encode(s)), 0).map((b) => text.decode(b)) }
  )

/** Any JSON value, objects sometimes with the keys a route expects. */
export const jsonWith = (keys: ReadonlyArray<string>, depth = 4): fc.Arbitrary<unknown> => {
  const key = keys.length === 0 ? fc.string({ maxLength: 12 }) : fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 12 }))
  const { value } = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", maxDepth: depth },
      fc.constant(null),
      fc.boolean(),
      fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -1, 65536, 2 ** 53, 1e308)),
      fc.oneof(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40, unit: "binary" }), fc.constantFrom("", "x".repeat(5000), "AAAA", "%00", "../../etc/passwd")),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(key, tie("value"), { maxKeys: 6 })
    )
  }))
  return value
}

/** A JSON body: usually an object with some of `keys` (each value any JSON), sometimes anything. */
export const bodyWith = (keys: ReadonlyArray<string>, valid?: () => Record<string, unknown>): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.dictionary(fc.constantFrom(...keys), jsonWith(keys, 3), { maxKeys: keys.length }) },
    { weight: 1, arbitrary: jsonWith(keys) },
    ...(valid === undefined
      ? []
      : [{
        weight: 3,
        // a valid body with one to three fields replaced or removed
        arbitrary: fc.array(fc.tuple(fc.constantFrom(...keys), fc.option(jsonWith([], 2))), { minLength: 1, maxLength: 3 }).map((changes) => {
          const b: Record<string, unknown> = valid()
          for (const [k, v] of changes) if (v === null) delete b[k]
          else b[k] = v
          return b
        })
      }])
  )
