/** Options shared by several `attest policy` command declarations (cheap: no policy code loaded). */
import { Options } from "@effect/cli"
import { hashAlgs } from "../../tpm/hashAlg.js"

/** `--hash-alg`: one of the TPM hash algorithms; each command says what it selects. */
export const hashAlgOption = (description: string) => Options.choice("hash-alg", hashAlgs).pipe(Options.withDescription(description))
