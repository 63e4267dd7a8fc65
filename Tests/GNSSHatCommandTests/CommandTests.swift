// The subcommands through the built binary: output, exit statuses, and the simulator board.
import Foundation
import GNSSHat
import Testing
import TestSupport

@Suite("gnss-hat subcommands")
struct CommandTests {
    @Test("--help lists the commands and the exit statuses; a bad command is exit status 2")
    func topLevel() throws {
        let help = try CommandRun.run(["--help"])
        #expect(help.status == 0)
        for command in ["watch", "decode", "serve", "simulate", "power", "boards", "info", "ttff"] {
            #expect(help.out.contains("  \(command) "), "\(command)")
        }
        #expect(help.out.contains("4  hardware unavailable"))
        let bad = try CommandRun.run(["frobnicate"])
        #expect(bad.status == 2 && bad.err.hasPrefix("gnss-hat: unknown command 'frobnicate'"))
        let none = try CommandRun.run([])
        #expect(none.status == 2 && none.out.isEmpty)
    }

    @Test("--version prints the package's version, one line")
    func version() throws {
        for flag in ["--version", "-V"] {
            let run = try CommandRun.run([flag])
            #expect(run.status == 0 && run.out == "gnss-hat \(GNSSHatVersion.current)\n" && run.err.isEmpty)
        }
    }

    @Test("each subcommand answers --help on standard output", arguments: [
        "watch", "decode", "serve", "simulate", "power", "boards", "info", "ttff", "ntrip",
    ])
    func help(command: String) throws {
        let result = try CommandRun.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("usage: gnss-hat \(command)"))
        #expect(result.err.isEmpty)
    }

    @Test("usage mistakes: one line naming the mistake, then the usage line; exit status 2", arguments: [
        (["watch", "--speed", "0"], "gnss-hat watch: --speed needs a number from 1 to 1000, not '0'"),
        (["power"], "gnss-hat power: missing on|off|status"),
        (["power", "sideways"], "gnss-hat power: expected on, off or status, not 'sideways'"),
        (["boards", "extra"], "gnss-hat boards: unexpected argument 'extra'"),
        (["info", "--linger"], "gnss-hat info: --linger needs a value (SECONDS)"),
        (["watch", "--every", "0"], "gnss-hat watch: --every needs a number of seconds from 1 to 86400, not '0'"),
        (["watch", "--ntrip-password-file", "/nonexistent"], "gnss-hat watch: --ntrip-password-file needs --ntrip"),
        (["serve", "--ntrip", "ntrips://caster.example/MOUNT"],
         "gnss-hat serve: --ntrip: invalid NTRIP URL 'ntrips://caster.example/MOUNT': ntrips:// is RTKLIB's NTRIP "
            + "server (a source); use ntrip+tls:// for TLS"),
        (["ntrip", "list", "ntrip://caster.example"], "gnss-hat ntrip: expected 'sources URL', not 'list'"),
        (["ntrip", "sources", "ntrip://caster.example", "--near", "99,0"],
         "gnss-hat ntrip: --near needs LAT,LON in degrees, not '99,0'"),
    ])
    func usage(arguments: [String], line: String) throws {
        let result = try CommandRun.run(arguments)
        #expect(result.status == 2)
        let lines = result.err.split(separator: "\n")
        #expect(lines.first.map(String.init) == line)
        #expect(lines.count == 2 && lines[1].hasPrefix("usage: gnss-hat \(arguments[0])"))
    }

    @Test("an unknown board or a broken board file is exit status 3")
    func boardErrors() throws {
        let unknown = try CommandRun.run(["info", "--board", "no-such-hat"])
        #expect(unknown.status == 3 && unknown.err.contains("no such board"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("boards"),
                                                withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("{\"name\": \"broken\"}".utf8).write(to: directory.appendingPathComponent("boards/broken.json"))
        let listing = try CommandRun.run(["boards"], directory: directory)
        #expect(listing.status == 3)
        #expect(listing.out.contains("broken  [boards/broken.json]\n    does not load:"))
        #expect(listing.out.contains("simulator  [built-in]"))
        let simulateReal = try CommandRun.run(["simulate", "--board", "uputronics-gps-rtc"])
        #expect(simulateReal.status == 3 && simulateReal.err.contains("simulate needs a simulator board"))
    }

    @Test("watch --every: a duty cycle on the simulator, one TPV per interval, off in between (PLAN and POWER lines)")
    func watchEvery() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-watch-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let result = try CommandRun.run([
            "watch", "--json", "--every", "60", "--accuracy", "10", "--speed", simulatorSpeed(200), "--duration", "150",
            "--state-dir", state,
        ])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n")
        let fixes = lines.filter { $0.contains(#""class":"TPV""#) && $0.contains(#""mode":3"#) }
        #expect((2...3).contains(fixes.count), "\(fixes.count) TPVs in 150 s at a fix every 60 s")
        #expect(lines.contains { $0.contains(#""class":"PLAN","plan":"duty cycle""#) })
        let powerOffs = lines.filter {
            $0.contains(#""class":"POWER""#) && $0.contains(#""reason":"duty cycle sleep""#) && !$0.contains("powering")
        }
        #expect((2...3).contains(powerOffs.count), "\(powerOffs.count) power-offs of the duty cycle in 150 s")
    }

    @Test("watch --every 600 on simulator-cut-supply for an hour: POWER on and off for each of the hat's power cycles")
    func watchDutyCycleHour() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("gnsshat-watch-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Fixes are due at 0, 600, ..., 3000 and 3600 s; the run ends well before the wake for 3600 (which comes
        // some 31 s early, at about 3569 s), so that it does not end in the middle of a power cycle: 69 simulated
        // seconds are 345 ms of real time at 200 times (a run ending at 3550 s was late to stop once, on a
        // machine whose every core was busy, and saw a seventh wake).
        let result = try CommandRun.run([
            "watch", "--board", "simulator-cut-supply", "--json", "--every", "600", "--speed", simulatorSpeed(200),
            "--duration", "3500", "--state-dir", state,
        ])
        #expect(result.status == 0, "\(result.err)")
        let objects = try result.out.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let powers = objects.filter { $0["class"] as? String == "POWER" }
        let record = try #require(objects.last { $0["class"] as? String == "SIMULATOR" })
        let hatOn = try #require(record["on"] as? [Double])
        let hatOff = try #require(record["off"] as? [Double])
        // The powered intervals the POWER objects tell: from each "powering on" to the next unpowered state.
        var reportedOn: [Double] = []
        var reportedOff: [Double] = []
        for power in powers {
            let state = try #require(power["state"] as? String)
            let time = try #require(power["time"] as? Double)
            let powered = ["powering on", "on", "power save", "powering off"].contains(state)
            if powered && reportedOn.count == reportedOff.count { reportedOn.append(time) }
            if !powered && reportedOn.count > reportedOff.count { reportedOff.append(time) }
        }
        print("watch, an hour at every 600 s: POWER on at \(reportedOn), off at \(reportedOff); "
              + "the simulated hat's own record on at \(hatOn), off at \(hatOff)")
        #expect(reportedOn.count == 6 && reportedOff.count == 6, "\(powers)")
        #expect(hatOn.count == reportedOn.count && hatOff.count == reportedOff.count)
        // The same cycles, edge for edge: "powering on" is timed as the sequence begins, the hat's as its supply
        // switches (the first time after the lines are requested), and the clock runs 200 times real time, so a
        // millisecond between them is 0.2 s; 10 s is 50 ms under load, and the cycles are 600 s apart.
        for (ours, hats) in zip(reportedOn + reportedOff, hatOn + hatOff) {
            #expect(abs(ours - hats) < 10, "reported \(ours) s, the hat \(hats) s")
        }
        // Each power cycle is the duty cycle's: woken for a fix, off again until the next.
        let wakes = powers.filter { $0["state"] as? String == "powering on" }.map { $0["reason"] as? String }
        #expect(wakes == Array(repeating: "duty cycle wake", count: 6), "\(wakes)")
        let sleeps = powers.filter { $0["state"] as? String == "off" }.map { $0["reason"] as? String }
        #expect(sleeps == ["initial"] + Array(repeating: "duty cycle sleep", count: 6), "\(sleeps)")
        // A 3D fix in every cycle, or all but one: at 200x on a loaded machine an aided restart can fall back to
        // a cold one (its identity poll has 5 ms of real time) and the cycle's window then closes before a fix.
        // What this test is about is the power above, edge for edge.
        let fixes = objects.filter { $0["class"] as? String == "TPV" && $0["mode"] as? Int == 3 }
        #expect((5...6).contains(fixes.count), "\(fixes.count) TPVs with a 3D fix")
    }

    @Test("boards: every built-in board with its chip, link and power strategies")
    func boards() throws {
        let directory = FileManager.default.temporaryDirectory
        let result = try CommandRun.run(["boards"], directory: directory)
        #expect(result.status == 0)
        #expect(result.out.contains("uputronics-gps-rtc  [built-in]"))
        #expect(result.out.contains("chip ublox-gen8 MAX-M8Q; UART /dev/ttyAMA0") || result.out.contains("uputronics"))
        #expect(result.out.contains("simulator  [built-in]\n    Simulated u-blox receiver (no hardware)\n"
            + "    chip ublox-gen9 simulated ZED-F9P; simulated receiver"))
        #expect(!result.out.contains("custom-template"))
    }

    @Test("info on the simulator: the chip, firmware and protocol version from MON-VER, at the link speed")
    func info() throws {
        let result = try CommandRun.run(["info", "--json"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("\"family\":\"ublox-gen9\""))
        #expect(result.out.contains("\"speed\":115200"))
        #expect(result.out.contains("\"protocolVersion\":27.31"))
        #expect(result.out.contains("\"answered\":true"))
    }

    @Test("power on the simulator drives the simulated enable line and says it is no hardware")
    func power() throws {
        let status = try CommandRun.run(["power", "status"])
        #expect(status.status == 0 && status.out.contains("no hardware line is touched"))
        let on = try CommandRun.run(["power", "on", "--linger", "0"])
        #expect(on.status == 0, "\(on.err)")
        #expect(on.out.contains("gpio-enable: enable line \"GNSS_PWR_EN\" (active high) asserted (supply on)"))
        #expect(on.out.contains("line enable: asserted (read back)"))
        #expect(on.out.contains("simulated receiver: acquiring after power-on"))
        let off = try CommandRun.run(["power", "off"])
        #expect(off.status == 0)
        #expect(off.out.contains("gpio-enable: enable line \"GNSS_PWR_EN\" (active high) released to inactive"))
        #expect(off.out.contains("simulated receiver: off after power-off"))
    }

    @Test("simulate prints its pseudo-terminal path, and stops on SIGTERM with status 0")
    func simulate() throws {
        let result = try CommandRun.run(["simulate"], terminateAfterFirstLine: true)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasPrefix("/dev/pts/"))
    }

    @Test("decode: a missing file is exit status 1 with one line")
    func decodeMissing() throws {
        let result = try CommandRun.run(["decode", "/nonexistent/capture.log"])
        #expect(result.status == 1)
        #expect(result.err == "gnss-hat decode: cannot open /nonexistent/capture.log: No such file or directory (ENOENT)\n"
            || result.err.hasPrefix("gnss-hat decode: cannot open /nonexistent/capture.log: "))
    }

    @Test("ttff on a fast simulator: a cold and a hot start, the enable line inactive after each")
    func ttff() throws {
        let result = try CommandRun.run(["ttff", "--speed", simulatorSpeed(50), "--off", "5", "--budget", "60", "--json"])
        #expect(result.status == 0, "\(result.out) \(result.err)")
        #expect(result.out.contains("\"passed\":true"))
        #expect(result.out.contains("enable line inactive after the last subscriber"))
    }
}
