// Where `gnss-hat serve` keeps its state when --state-dir is not given.
import Testing
@testable import gnss_hat

@Suite("state directory")
struct StateDirectoryTests {
    func resolve(_ option: String?, _ variables: [String: String], root: Bool) -> String? {
        StateDirectory.resolve(option, environment: { variables[$0] }, isRoot: root)
    }

    @Test("--state-dir wins; then systemd's $STATE_DIRECTORY (its first path), for root or not")
    func explicitAndSystemd() {
        #expect(resolve("/srv/hat", ["STATE_DIRECTORY": "/var/lib/gnss-hat"], root: true) == "/srv/hat")
        #expect(resolve(nil, ["STATE_DIRECTORY": "/var/lib/gnss-hat:/var/lib/other", "HOME": "/home/pi"], root: false)
                    == "/var/lib/gnss-hat")
    }

    @Test("root: /var/lib/gnss-hat; a user: $XDG_STATE_HOME/gnss-hat, else ~/.local/state/gnss-hat; else none")
    func defaults() {
        #expect(resolve(nil, ["HOME": "/root"], root: true) == "/var/lib/gnss-hat")
        #expect(resolve(nil, ["XDG_STATE_HOME": "/home/pi/state", "HOME": "/home/pi"], root: false)
                    == "/home/pi/state/gnss-hat")
        #expect(resolve(nil, ["HOME": "/home/pi"], root: false) == "/home/pi/.local/state/gnss-hat")
        // A relative XDG_STATE_HOME is invalid by the XDG specification: ignored.
        #expect(resolve(nil, ["XDG_STATE_HOME": "state", "HOME": "/home/pi"], root: false)
                    == "/home/pi/.local/state/gnss-hat")
        #expect(resolve(nil, [:], root: false) == nil)
    }
}
