// GNSSHat: filled by its issue.
