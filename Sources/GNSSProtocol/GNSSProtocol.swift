// GNSSProtocol: filled by its issue.
