# The NixOS module of attest (flake output nixosModules.default):
#   services.attest.{registrar,verifier,agent,pushAgent}  the four long-running commands
#   programs.attest                                       the `attest` command with /etc/attest/tenant.toml
#
# Its two generated parts are written by `npm run nix` and CI fails when they are not current:
#   options.generated.nix  every option of every configuration section (src/config/sections.ts),
#                          with the program's types, defaults and descriptions: the `settings`
#   units.generated.nix    the units and their hardening (scripts/nix/units.ts), the same as
#                          packaging/systemd
# This file wires them: store paths, the TOML file, and what the settings imply (state
# directories, a capability for a port below 1024, the TPM device of the TCTI).
# Needs nixpkgs 25.05 or later (types.pathWith).
{ self }:
{ config, lib, pkgs, utils, ... }:
let
  inherit (lib) mkOption mkEnableOption mkIf mkMerge mkDefault types literalExpression;

  sectionOptions = import ./options.generated.nix { inherit lib; };
  units = import ./units.generated.nix;
  toml = pkgs.formats.toml { };

  # A file the unit reads at start, never copied to the store (a path literal is refused).
  secretPath = types.pathWith { absolute = true; inStore = false; };

  packageOption = mkOption {
    type = types.package;
    default = self.packages.${pkgs.stdenv.hostPlatform.system}.attest;
    defaultText = literalExpression "attest.packages.\${pkgs.stdenv.hostPlatform.system}.attest";
    description = "The attest package whose `attest` executable runs.";
  };

  # Exactly the program's options: one it does not know fails evaluation, as it would fail start-up.
  settingsOption = section: mkOption {
    type = types.submodule { options = sectionOptions.${section}; };
    default = { };
    description = ''
      The `[${section}]` section of attest's configuration file, written with `pkgs.formats.toml`.
      Every option of the program is here with its default (src/config/sections.ts). Variables
      `ATTEST_${lib.toUpper section}_<OPTION>` from `environmentFile` override these values.
    '';
  };

  configFile = name: section: settings: toml.generate "attest-${name}.toml" { ${section} = settings; };

  unitOptions = name: unit:
    {
      enable = mkEnableOption unit.description;
      package = packageOption;
      settings = settingsOption unit.section;
      environmentFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/${unit.unit}.env";
        description = ''
          A file of `ATTEST_${lib.toUpper unit.section}_<OPTION>=value` lines that systemd reads at
          start (`EnvironmentFile=`), for values that must stay out of the Nix store, such as a
          `database_url` with its password. They override `settings`; an unknown variable stops
          start-up.
        '';
      };
      credentials = mkOption {
        type = types.attrsOf secretPath;
        default = { };
        example = { server-key = "/run/secrets/attest-server-key.pem"; };
        description = ''
          Files handed to the unit with systemd's `LoadCredential=` (name = path): readable by the
          unit alone, at `credentialsDirectory`/name. Point a setting at one, e.g.
          `settings.server_key = "/run/credentials/${unit.unit}.service/server-key"`.
        '';
      };
      credentialsDirectory = mkOption {
        type = types.str;
        readOnly = true;
        default = "/run/credentials/${unit.unit}.service";
        description = "Where the unit finds its `credentials`.";
      };
    }
    // lib.optionalAttrs (unit.listen != [ ]) {
      openFirewall = mkOption {
        type = types.bool;
        default = false;
        description = "Open the ports the unit serves on (${lib.concatStringsSep ", " unit.listen}; not the metrics port) in the firewall.";
      };
    }
    // lib.optionalAttrs (unit ? tcti) {
      tcti = mkOption {
        type = types.str;
        default = unit.tcti;
        example = "swtpm:host=127.0.0.1,port=2321";
        description = ''
          The tpm2-tools TCTI of the TPM (`--tcti`). A `device:` TCTI names the one device the
          unit may open (`DeviceAllow=`); the device must be in the `tss` group.
        '';
      };
    };

  cfgOf = name: config.services.attest.${name};
  enabled = lib.filterAttrs (name: _: (cfgOf name).enable) units;

  serviceFor = name: unit:
    let
      cfg = cfgOf name;
      s = cfg.settings;
      file = configFile unit.command unit.section s;
      # directories it writes: the outermost of those the settings name
      paths = lib.unique (lib.filter (lib.hasPrefix "/") (map (o: s.${o}) unit.writable));
      outermost = lib.filter (p: !(lib.any (q: q != p && lib.hasPrefix "${q}/" p) paths)) paths;
      underVarLib = lib.filter (lib.hasPrefix "/var/lib/") outermost;
      elsewhere = lib.filter (p: !(lib.hasPrefix "/var/lib/" p)) outermost;
      # a port below 1024 needs CAP_NET_BIND_SERVICE, which a private user namespace would void
      lowPorts = lib.filter (p: p > 0 && p < 1024) (map (o: s.${o}) (unit.listen ++ unit.metrics));
      capabilities = lib.filter (c: c != "") [ unit.serviceConfig.CapabilityBoundingSet ]
        ++ lib.optional (lowPorts != [ ]) "CAP_NET_BIND_SERVICE";
      device = if unit ? tcti && lib.hasPrefix "device:" cfg.tcti then lib.removePrefix "device:" cfg.tcti else null;
      args = [ (lib.getExe' cfg.package "attest") unit.command "--config" file ]
        ++ unit.args
        ++ lib.optionals (unit ? tcti) [ "--tcti" cfg.tcti ];
    in
    {
      description = unit.description;
      wantedBy = [ "multi-user.target" ];
      after = unit.after ++ lib.optional config.services.postgresql.enable "postgresql.service";
      inherit (unit) wants conflicts;
      path = lib.optional (unit ? tcti) pkgs.tpm2-tools;
      serviceConfig = unit.serviceConfig // {
        ExecStart = utils.escapeSystemdExecArgs args;
        StateDirectory = map (lib.removePrefix "/var/lib/") underVarLib;
        ReadWritePaths = elsewhere;
        LoadCredential = lib.mapAttrsToList (n: p: "${n}:${p}") cfg.credentials;
        CapabilityBoundingSet = lib.concatStringsSep " " capabilities;
        AmbientCapabilities = lib.concatStringsSep " " capabilities;
      }
      // lib.optionalAttrs (cfg.environmentFile != null) { EnvironmentFile = cfg.environmentFile; }
      // lib.optionalAttrs (unit ? tcti) { DeviceAllow = lib.optional (device != null) "${device} rw"; }
      // lib.optionalAttrs (lowPorts != [ ]) { PrivateUsers = "no"; };
    };

  # directories outside /var/lib that the settings name: made for the attest user
  extraDirectories = lib.concatLists (lib.mapAttrsToList
    (name: unit:
      let s = (cfgOf name).settings; in
      lib.filter (p: lib.hasPrefix "/" p && !(lib.hasPrefix "/var/lib/" p)) (map (o: s.${o}) unit.writable))
    enabled);

  tenant = config.programs.attest;
in
{
  options.services.attest = lib.mapAttrs unitOptions units;

  options.programs.attest = {
    enable = mkEnableOption "the `attest` command (tenant, policies, offline checks) with /etc/attest/tenant.toml";
    package = packageOption;
    settings = settingsOption "tenant";
  };

  config = mkMerge [
    (mkIf (enabled != { }) {
      assertions = [
        {
          assertion = !((cfgOf "agent").enable && (cfgOf "pushAgent").enable);
          message = "services.attest.agent and services.attest.pushAgent are both enabled: a machine runs one agent (both use the [agent] section's uuid, data_dir and TPM keys).";
        }
      ];

      users.users.attest = {
        isSystemUser = true;
        group = "attest";
        home = "/var/lib/attest";
        description = "attest remote attestation";
      };
      users.groups.attest = { };

      systemd.services = lib.mapAttrs' (name: unit: lib.nameValuePair unit.unit (serviceFor name unit)) enabled;

      systemd.tmpfiles.rules = map (p: "d ${p} 0750 attest attest -") (lib.unique extraDirectories);

      networking.firewall.allowedTCPPorts = lib.concatLists (lib.mapAttrsToList
        (name: unit:
          let cfg = cfgOf name; in
          lib.optionals (cfg.openFirewall or false) (lib.filter (p: p > 0) (map (o: cfg.settings.${o}) unit.listen)))
        enabled);
    })

    # the agents' TPM: the tss group and its udev rule for /dev/tpmrm0
    (mkIf ((cfgOf "agent").enable || (cfgOf "pushAgent").enable) {
      security.tpm2.enable = mkDefault true;
    })

    (mkIf tenant.enable {
      environment.systemPackages = [ tenant.package ];
      environment.etc."attest/tenant.toml".source = configFile "tenant" "tenant" tenant.settings;
    })
  ];
}
