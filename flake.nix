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

      # services.attest.{registrar,verifier,agent,pushAgent} and programs.attest: nix/module.nix,
      # its options generated from src/config/sections.ts (`npm run nix`).
      nixosModules.default = import ./nix/module.nix { inherit self; };
      nixosModules.attest = self.nixosModules.default;

      # The module's NixOS VM test (needs KVM): nix build .#checks.x86_64-linux.nixos -L
      checks = forAllSystems (pkgs: {
        nixos = import ./nix/test.nix { inherit pkgs self; };
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = with pkgs; [ nodejs_20 swtpm tpm2-tools postgresql ];
        };
      });
    };
}
