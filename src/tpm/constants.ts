/** TPM 2.0 constants used by the structure codecs (TPM 2.0 Part 2). */

/** TPM_ALG_ID values. */
export const TPM_ALG = {
  rsa: 0x0001,
  sha1: 0x0004,
  hmac: 0x0005,
  aes: 0x0006,
  keyedhash: 0x0008,
  xor: 0x000a,
  sha256: 0x000b,
  sha384: 0x000c,
  sha512: 0x000d,
  null: 0x0010,
  rsassa: 0x0014,
  rsaes: 0x0015,
  rsapss: 0x0016,
  oaep: 0x0017,
  ecdsa: 0x0018,
  ecdh: 0x0019,
  ecdaa: 0x001a,
  ecschnorr: 0x001c,
  ecc: 0x0023,
  symcipher: 0x0025,
  ctr: 0x0040,
  ofb: 0x0041,
  cbc: 0x0042,
  cfb: 0x0043,
  ecb: 0x0044
} as const

/** TPM_ST structure tags of TPMS_ATTEST. */
export const TPM_ST_ATTEST_CERTIFY = 0x8017
export const TPM_ST_ATTEST_QUOTE = 0x8018
/** TPMS_ATTEST.magic: "\xffTCG". */
export const TPM_GENERATED_VALUE = 0xff544347

/** TPMA_OBJECT bits. */
export const TPMA_OBJECT = {
  fixedTPM: 1 << 1,
  stClear: 1 << 2,
  fixedParent: 1 << 4,
  sensitiveDataOrigin: 1 << 5,
  userWithAuth: 1 << 6,
  adminWithPolicy: 1 << 7,
  noDA: 1 << 10,
  encryptedDuplication: 1 << 11,
  restricted: 1 << 16,
  decrypt: 1 << 17,
  sign: 1 << 18,
  x509sign: 1 << 19
} as const

/** TPMA_OBJECT bits the specification reserves: a TPM refuses an area with one set (TPM_RC_RESERVED_BITS). */
export const TPMA_OBJECT_RESERVED = 0xfff0f309

/** TPM_ECC_CURVE ids. */
export const TPM_ECC = {
  nistP256: 0x0003,
  nistP384: 0x0004
} as const

/** Hierarchy handles (their Name is the 4-byte handle). */
export const TPM_RH_OWNER = 0x40000001
export const TPM_RH_ENDORSEMENT = 0x4000000b

/** tpm2-tools credential file header (tpm2_makecredential output). */
export const CREDENTIAL_FILE_MAGIC = 0xbadcc0de
export const CREDENTIAL_FILE_VERSION = 1
