/** Invariants the parser targets share. */
import { Either } from "effect"
import { expect } from "vitest"

/**
 * `f` answers (never throws); when it fails, the failure is the typed error `tag` ("string": a
 * reason text, for the few parsers whose callers word the error themselves).
 */
export const typedOutcome = <A, E>(what: string, tag: string, f: () => Either.Either<A, E>): Either.Either<A, E> => {
  let r: Either.Either<A, E>
  try {
    r = f()
  } catch (e) {
    throw new Error(`${what} threw instead of failing with ${tag}: ${e instanceof Error ? e.stack : String(e)}`)
  }
  expect(Either.isEither(r), `${what} answers an Either`).toBe(true)
  if (Either.isLeft(r)) {
    if (tag === "string") expect(typeof r.left, `${what} fails with a reason`).toBe("string")
    else expect((r.left as { _tag?: unknown })._tag, `${what} fails with ${tag}`).toBe(tag)
    expect(internalError(typeof r.left === "string" ? { reason: r.left } : r.left), `${what}: a JavaScript error caught and passed on as the reason`).toBeUndefined()
  }
  return r
}

const INTERNAL = /\b(TypeError|RangeError|ReferenceError)\b|Cannot read properties|is not a function|undefined is not/

/** A message of a typed error that is a caught JavaScript error (a crash in disguise), if any. */
export const internalError = (e: unknown): string | undefined => {
  if (typeof e !== "object" || e === null) return undefined
  for (const v of Object.values(e)) if (typeof v === "string" && INTERNAL.test(v)) return v
  return undefined
}

/** `f` does not throw; its answer is returned. */
export const noThrow = <A>(what: string, f: () => A): A => {
  try {
    return f()
  } catch (e) {
    throw new Error(`${what} threw: ${e instanceof Error ? e.stack : String(e)}`)
  }
}
