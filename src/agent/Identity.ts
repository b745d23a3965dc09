/** Who this agent is once started: its id, the loaded AK and the algorithms it quotes with. */
import { Context } from "effect"
import type { Ak, HashAlg, KeyAlg, SignScheme } from "../tpm/Tpm.js"

export interface AgentIdentityShape {
  readonly agentId: string
  readonly ak: Ak
  readonly ekAlg: KeyAlg
  readonly hashAlg: HashAlg
  readonly encAlg: KeyAlg
  /** RSA modulus bits or ECC curve bits (API ≥ 2.5 reports e.g. "rsa2048"). */
  readonly encBits: number
  readonly signAlg: SignScheme
}

export class AgentIdentity extends Context.Tag("attest/agent/AgentIdentity")<AgentIdentity, AgentIdentityShape>() {}
