// GPSD: filled by its issue.
