/**
 * The flood of test/verifier/statelessFlood.test.ts and bench/public-flood.ts, in a process of its
 * own (so its CPU is not the verifier's): C clients, each with its own keep-alive connection, post
 * the body in `bodyFile` to verify/evidence back to back for S seconds. Each request's text has its
 * `FLOOD000000` marker replaced by a counter, so every request carries a policy of its own (no
 * compile cache helps). Prints one JSON line: answers by status, and whether every 503 said
 * Retry-After.
 *
 *   node --import tsx test/verifier/floodClients.ts <url> <caFile> <bodyFile> <clients> <seconds>
 */
import { readFileSync } from "node:fs"
import * as https from "node:https"

const [url, caFile, bodyFile, clients, seconds] = process.argv.slice(2)
const ca = readFileSync(caFile!, "utf8")
const template = readFileSync(bodyFile!, "utf8")
const marker = template.indexOf("FLOOD000000")
const until = Date.now() + Number(seconds) * 1000
const statuses: Record<string, number> = {}
let retryAfterMissing = 0
let counter = 0

const post = (agent: https.Agent) =>
  new Promise<void>((resolve) => {
    const n = String(counter++).padStart(11, "0")
    const body = marker < 0 ? template : template.slice(0, marker) + n + template.slice(marker + 11)
    const req = https.request(new URL("/v2.6/verify/evidence", url), {
      method: "POST",
      agent,
      ca,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      res.resume()
      res.on("end", () => {
        const s = String(res.statusCode)
        statuses[s] = (statuses[s] ?? 0) + 1
        if (res.statusCode === 503 && res.headers["retry-after"] === undefined) retryAfterMissing++
        resolve()
      })
    })
    req.on("error", () => {
      statuses["error"] = (statuses["error"] ?? 0) + 1
      resolve()
    })
    req.end(body)
  })

const client = async () => {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
  while (Date.now() < until) await post(agent)
  agent.destroy()
}

// the flood starts now (the caller times its window from this line)
console.log("start")
await Promise.all(Array.from({ length: Number(clients) }, client))
console.log(JSON.stringify({ statuses, retryAfterMissing }))
