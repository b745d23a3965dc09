/**
 * The body of the verify/evidence floods (test/verifier/statelessFlood.test.ts, bench/public-flood.ts):
 * Keylime's captured valid request with `digests` more files in its runtime policy, one of them the
 * `FLOOD000000` marker floodClients.ts replaces per request (every request a policy of its own).
 */
import { record } from "./support.js"

export const floodBody = (digests: number): string => {
  const body = structuredClone(record("ver-evidence-ok-runtime-policy").request.body) as { data: Record<string, string> }
  const policy = JSON.parse(body.data["runtime_policy"]!) as { digests: Record<string, Array<string>> }
  policy.digests["/flood/FLOOD000000"] = ["0".repeat(64)]
  for (let i = 0; i < digests; i++) policy.digests[`/usr/lib/flood/pkg-${i % 997}/file-${i}.so`] = [i.toString(16).padStart(64, "a")]
  body.data["runtime_policy"] = JSON.stringify(policy)
  return JSON.stringify(body)
}
