/**
 * Public keys from the encodings the engines meet (an X.509 certificate, a SubjectPublicKeyInfo, a
 * PKCS#1 RSAPublicKey; DER bytes or PEM text), read in plain code by both crypto ports: one reader,
 * so a key is a key under node and in a browser alike. Each port then imports the components (and
 * checks an EC point is on its curve).
 */
import { fromPem } from "./pem.js"
import { latin1 } from "./encoding.js"
import type { CryptoPort, KeyComponents, OtherPublicKey, PublicKey } from "./port.js"
import { pointOf } from "./noble.js"
import { readRsaPublicKey, readSpki, type SpkiContents } from "./spki.js"
import { readCertificate } from "./x509.js"

export type KeyRead = KeyComponents | OtherPublicKey | undefined

const ofContents = (c: SpkiContents): KeyRead => {
  if (c.type !== "ec") return c
  const p = pointOf(c.curve, c.point)
  return p === undefined ? undefined : { type: "ec", curve: c.curve, x: p.x, y: p.y }
}

const ofSpki = (der: Uint8Array): KeyRead => {
  const c = readSpki(der)
  return c === undefined ? undefined : ofContents(c)
}

const ofPkcs1 = (der: Uint8Array): KeyRead => {
  const rsa = readRsaPublicKey(der)
  return rsa === undefined ? undefined : { type: "rsa", ...rsa }
}

const ofDer = (der: Uint8Array): KeyRead => {
  const cert = readCertificate(der)
  if (cert._tag === "Right") return ofSpki(cert.right.spki)
  return ofSpki(der) ?? ofPkcs1(der)
}

/** The first CERTIFICATE, PUBLIC KEY or RSA PUBLIC KEY block of PEM text. */
const ofPem = (text: string): KeyRead => {
  for (const block of fromPem(text)) {
    if (block.label === "CERTIFICATE" || block.label === "PUBLIC KEY") return ofDer(block.der)
    if (block.label === "RSA PUBLIC KEY") return ofPkcs1(block.der)
  }
  return undefined
}

const isPem = (b: Uint8Array): boolean => latin1(b.subarray(0, 4096)).includes("-----BEGIN ")

/** The key in `data`, or undefined when it holds none. */
export const readPublicKey = (data: Uint8Array | string): KeyRead =>
  typeof data === "string" ? ofPem(data) : isPem(data) ? ofPem(latin1(data)) : ofDer(data)

/** A port's `publicKeyFrom`: the key read here, imported by the port (which checks it). */
export const publicKeyWith = (importKey: CryptoPort["importKey"]) => (data: Uint8Array | string): PublicKey | undefined => {
  const read = readPublicKey(data)
  if (read === undefined || read.type === "other") return read
  const key = importKey(read)
  return typeof key === "string" ? undefined : key
}
