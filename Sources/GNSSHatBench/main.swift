print("GNSSHatBench: not yet")
