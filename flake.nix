{
  description = "attest: remote attestation for machines with a TPM 2.0 (Keylime wire-compatible)";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      packageJson = builtins.fromJSON (builtins.readFile ./package.json);
    in
    {
      packages = forAllSystems (pkgs: {
        attest = pkgs.buildNpmPackage {
          pname = packageJson.name;
          inherit (packageJson) version;
          src = ./.;
          nodejs = pkgs.nodejs_20;

          # Dependencies come straight from package-lock.json: no npmDepsHash to keep in step.
          npmDeps = pkgs.importNpmLock { npmRoot = ./.; };
          npmConfigHook = pkgs.importNpmLock.npmConfigHook;

          # better-sqlite3 builds its native addon with node-gyp.
          nativeBuildInputs = [ pkgs.python3 ];

          npmBuildScript = "build";

          meta = {
            description = packageJson.description;
            license = pkgs.lib.licenses.asl20;
            mainProgram = "attest";
            platforms = pkgs.lib.platforms.linux;
          };
        };
        default = self.packages.${pkgs.system}.attest;
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = with pkgs; [ nodejs_20 swtpm tpm2-tools postgresql ];
        };
      });
    };
}
