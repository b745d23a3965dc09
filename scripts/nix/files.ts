/** Every file `npm run nix` writes: path under the repository → its text. */
import { unitsFile } from "./nixUnits.js"
import { optionsFile } from "./options.js"
import { packagingFiles } from "./packaging.js"

export const generatedFiles = (): ReadonlyArray<readonly [string, string]> => [
  ["nix/options.generated.nix", optionsFile()],
  ["nix/units.generated.nix", unitsFile()],
  ...packagingFiles()
]
