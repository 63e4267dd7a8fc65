// The package's version: what `gnss-hat --version` prints, the Debian packages carry and the NTRIP
// client names in its User-Agent. One place; scripts read it from the built binary.

/// This release of GNSSHat.
public enum GNSSHatVersion {
    /// The version, `MAJOR.MINOR.PATCH`.
    public static let current = "0.4.0"
}
