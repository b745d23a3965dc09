/**
 * attest/ear: a relying party's side of EAR, portable (no Node built-in): `verifyEar(token, keys)`
 * (jose) with the keys of the verifier's JWKS (`keysFromJwks`), the claims' schemas and
 * `overallStatus`. Issuing EARs (node keys) is the verifier's (src/ear/index.ts).
 */
export * from "./claims.js"
export * from "./jwks.js"
export * from "./verify.js"
export * from "./appraisal.js"
