/**
 * Reading a running `attest up` from a test: a GET with the admin certificate `up` generated under
 * `<cwd>/.attest/cv_ca`, and whether a port is closed after it stopped.
 */
import { readFileSync } from "node:fs"
import * as https from "node:https"
import * as net from "node:net"
import { join } from "node:path"

/** GET `path` on `url` as up's admin: status and JSON body (undefined when empty). */
export const upAdminGet = (cwd: string, url: string, path: string) =>
  new Promise<{ status: number; json: any }>((resolve, reject) => {
    const ca = join(cwd, ".attest/cv_ca")
    https.get(`${url}${path}`, {
      ca: readFileSync(join(ca, "cacert.crt")),
      cert: readFileSync(join(ca, "client-cert.crt")),
      key: readFileSync(join(ca, "client-private.pem"))
    }, (res) => {
      let body = ""
      res.on("data", (c) => (body += c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: body === "" ? undefined : JSON.parse(body) }))
    }).on("error", reject)
  })

/** Nothing listens on 127.0.0.1:`port` any more. */
export const portClosed = (port: number) =>
  new Promise<boolean>((r) => {
    const s = net.connect({ host: "127.0.0.1", port })
    s.once("connect", () => (s.destroy(), r(false)))
    s.once("error", () => r(true))
  })
