// GNSSHatTesting: filled by its issue.
