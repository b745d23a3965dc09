/** `attest policy …`: write, sign and check runtime and measured-boot policies offline. */
import { Command } from "@effect/cli"
import { checkCommand } from "./policy/check.js"
import { checkBootCommand } from "./policy/checkBoot.js"
import { createMeasuredBootCommand } from "./policy/createMeasuredBoot.js"
import { createRuntimeCommand } from "./policy/createRuntime.js"
import { signCommand } from "./policy/sign.js"
import { verifyCommand } from "./policy/verify.js"

const createCommand = Command.make("create").pipe(
  Command.withDescription("Create a policy: `runtime` (IMA) or `measured-boot` (UEFI reference state)."),
  Command.withSubcommands([createRuntimeCommand, createMeasuredBootCommand])
)

export const policyCommand = Command.make("policy").pipe(
  Command.withDescription("Write, sign and check runtime (IMA) and measured-boot policies offline."),
  Command.withSubcommands([createCommand, signCommand, verifyCommand, checkCommand, checkBootCommand])
)
