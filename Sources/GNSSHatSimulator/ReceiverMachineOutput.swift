// What the simulated receiver sends: boot messages, each epoch's navigation output on the scripted
// trajectory (or a capture played back), and its PPS pulses; frames corrupted or held back on request.
import GNSSHat
import GNSSProtocol
import LinuxSystem
import PiHardware

extension ReceiverMachine {
    // MARK: Output

    /// Frames out, unless silent or stalled; corrupted on request.
    mutating func send(_ frame: [UInt8], now: Duration, output: inout ReceiverOutput) {
        if silent { return }
        if let until = stallUntil {
            if now < until { return }
            stallUntil = nil
        }
        var frame = frame
        if corruptFrames > 0, frame.count > 4 {
            corruptFrames -= 1
            // The checksum: UBX's last byte, or the last hex digit before NMEA's CR LF.
            if frame[0] == 0xB5 {
                frame[frame.count - 1] ^= 0x5A
            } else {
                let index = frame.count - 3
                frame[index] = frame[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            }
        }
        output.bytes += frame
    }

    mutating func sendBootMessages(now: Duration, output: inout ReceiverOutput) {
        if isUBlox {
            let lines = [
                "u-blox AG - www.u-blox.com", "HW UBX 9 00190000", "ROM CORE 1.00 (simulated)",
                "PROTVER=" + String(format2: protocolVersion), "MOD=" + settings.model,
            ]
            for line in lines {
                send(NMEATXT(talker: .gn, sentenceCount: 1, sentenceNumber: 1, textID: 2, text: line).sentence(),
                     now: now, output: &output)
            }
        } else {
            send(PMTK.command(11, ["MTKGPS"]), now: now, output: &output)
            send(PMTKMessage.system(message: 1).sentence(), now: now, output: &output)
        }
    }

    /// The scripted trajectory at `time` (clock offset): a straight line at constant speed.
    func position(at time: Duration) -> (latitude: Double, longitude: Double) {
        let simulation = settings.simulation
        let metres = simulation.speed * SimulationMath.seconds(time)
        let course = SimulationMath.radians(simulation.course)
        let north = metres * SimulationMath.cosine(course)
        let east = metres * SimulationMath.sine(course)
        let latitude = simulation.latitude + north / 111_320
        let scale = max(SimulationMath.cosine(SimulationMath.radians(latitude)), 0.01)
        return (latitude, simulation.longitude + east / (111_320 * scale))
    }

    /// A fixed constellation whose geometry turns slowly with time.
    func satellites(at time: Duration, tracking: Bool) -> [SimulatedSatellite] {
        let minutes = SimulationMath.seconds(time) / 60
        let ids: [(GNSSSystem, Int)] = [
            (.gps, 2), (.gps, 5), (.gps, 12), (.gps, 15), (.gps, 19), (.gps, 24), (.gps, 25), (.gps, 29),
            (.galileo, 3), (.galileo, 8), (.galileo, 13), (.galileo, 26),
        ]
        return ids.enumerated().map { index, id in
            let elevation = 10 + (index * 37 + Int(minutes / 4)) % 75
            let azimuth = (index * 53 + Int(minutes)) % 360
            let strength = tracking ? 28 + (index * 7) % 20 : 12 + (index * 5) % 10
            return SimulatedSatellite(system: id.0, svid: id.1, elevation: elevation, azimuth: azimuth,
                                      strength: strength, used: tracking && index < 9)
        }
    }

    /// The fix's horizontal accuracy (NAV-PVT hAcc, metres): a few metres at the first fix after a start
    /// (hot and aided 4 m, cold 6 m, all within a "10 m" demand), improving linearly to 1.5 m over 10 s as
    /// more satellites and measurements come in.
    func horizontalAccuracy(at epoch: Duration) -> Double {
        let floor = 1.5
        let first: Double
        switch starts.last {
        case .hot?, .aided?: first = 4
        case .cold?, .timeAided?, nil: first = 6
        }
        guard let since = firstFixAt.map({ SimulationMath.seconds(epoch - $0) }) else { return first }
        return max(floor, first - (first - floor) * since / 10)
    }

    mutating func sendEpoch(at epoch: Duration, output: inout ReceiverOutput) {
        if let replay = settings.replay, !replay.bytes.isEmpty {
            // A period's worth of the capture at its line speed, in a loop.
            let count = max(1, Int(Double(replay.bytesPerSecond) * SimulationMath.seconds(period)))
            var chunk: [UInt8] = []
            chunk.reserveCapacity(count)
            while chunk.count < count {
                let take = min(count - chunk.count, replay.bytes.count - replayOffset)
                chunk += replay.bytes[replayOffset..<(replayOffset + take)]
                replayOffset = (replayOffset + take) % replay.bytes.count
            }
            send(chunk, now: epoch, output: &output)
            epochsSent += 1
            return
        }
        let fixed = fixAt.map { epoch >= $0 } ?? false
        if fixed, mode == .acquiring {
            firstFixAt = epoch
            // Power save switched on while acquiring takes over at the first fix.
            enter(powerSave.interval == nil ? .tracking : .powerSave, now: epoch)
            nextEpoch = gridAfter(epoch)
        }
        if fixed {
            ephemerisUntil = epoch + settings.ephemerisLifetime
            almanac = true
        }
        let time = GNSSTime(nanosecondsSinceEpoch: settings.startTime.nanosecondsSinceEpoch
            + epoch.clampedNanoseconds)
        let satellites = satellites(at: epoch, tracking: fixed)
        let accuracy = horizontalAccuracy(at: epoch)
        let rtk = fixed ? rtkSolution(at: epoch, accuracy: accuracy) : nil
        let frames = isUBlox
            ? SimulatedEpoch.ublox(time: time, position: fixed ? position(at: epoch) : nil,
                                   accuracy: rtk?.accuracy ?? accuracy, settings: settings,
                                   satellites: satellites, nmea: nmeaOutput, ubx: ubxOutput, rtk: rtk)
            : SimulatedEpoch.mtk(time: time, position: fixed ? position(at: epoch) : nil, settings: settings,
                                 satellites: satellites, rates: mtkRates)
        let before = output.bytes.count
        for frame in frames { send(frame, now: epoch, output: &output) }
        if output.bytes.count > before || frames.isEmpty {
            epochsSent += 1
            if fixed { fixesSent += 1 }
        }
        if fixed && !silent {
            ppsSequence += 1
            output.pulses.append(EdgeEvent(kind: .rising, timestamp: epoch, clock: .monotonic, sequence: ppsSequence))
        }
    }
}

extension String {
    /// A number with two decimals (`27.31`), as MON-VER's PROTVER prints it.
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        self = "\(hundredths / 100)." + (fraction < 10 ? "0\(fraction)" : "\(fraction)")
    }
}
