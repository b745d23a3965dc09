# The NixOS VM test of nix/module.nix: one machine with a TPM (swtpm behind QEMU) running the
# verifier, the registrar and the pull agent as the module makes them, hardened; the tenant enrols
# the agent and the verifier attests it. Run it with
#   nix build .#checks.x86_64-linux.nixos -L        (or: nix flake check -L)
# It needs nixpkgs and KVM, which attest's CI has neither of; run it when changing the module.
{ pkgs, self }:
pkgs.testers.runNixOSTest {
  name = "attest";

  nodes.machine = { ... }: {
    imports = [ self.nixosModules.default ];
    virtualisation.memorySize = 2048;
    # a TPM 2.0 (swtpm) for /dev/tpmrm0, and an IMA list for the agent to read
    virtualisation.tpm.enable = true;
    boot.kernelParams = [ "ima_policy=tcb" ];

    services.attest.verifier.enable = true;
    services.attest.registrar.enable = true;
    services.attest.agent.enable = true;
    programs.attest.enable = true;
  };

  testScript = ''
    uuid = "d432fbb3-d2f1-4a97-9ef7-75bd81c00000"  # the [agent] uuid's default
    config = "--config /etc/attest/tenant.toml"

    start_all()

    with subtest("the servers and the agent start under their hardened units"):
        machine.wait_for_unit("attest-verifier.service")
        machine.wait_for_open_port(8881)
        machine.wait_for_unit("attest-registrar.service")
        machine.wait_for_open_port(8890)
        machine.wait_for_open_port(8891)
        machine.wait_for_unit("attest-agent.service")
        machine.wait_for_open_port(9002)

    with subtest("the agent registered with the registrar through the TPM device"):
        machine.wait_until_succeeds(f"attest tenant reglist {config} | grep {uuid}", timeout=180)

    with subtest("the verifier attests the agent: quotes, the IMA list and the boot log read"):
        # swtpm's EK certificate is not in an EK trust store here
        machine.succeed(f"ATTEST_TENANT_REQUIRE_EK_CERT=false attest tenant add --uuid {uuid} {config}")
        machine.wait_until_succeeds(f"attest tenant status --uuid {uuid} {config} | grep 'Get Quote'", timeout=180)

    with subtest("systemd's exposure score of each unit stays where the hardening puts it"):
        # scores measured with `systemd-analyze security --offline` on packaging/systemd: 1.2 (servers), 1.9 (agents)
        for unit, threshold in [("attest-verifier", 15), ("attest-registrar", 15), ("attest-agent", 22)]:
            machine.succeed(f"systemd-analyze security --threshold={threshold} {unit}.service")

    with subtest("the servers hold no capability; the agent one, to read securityfs"):
        for unit in ["attest-verifier", "attest-registrar"]:
            pid = machine.succeed(f"systemctl show -P MainPID {unit}").strip()
            machine.succeed(f"grep -E '^CapEff:\\s+0+$' /proc/{pid}/status")
        pid = machine.succeed("systemctl show -P MainPID attest-agent").strip()
        machine.succeed(f"grep -E '^CapEff:\\s+0+4$' /proc/{pid}/status")
  '';
}
