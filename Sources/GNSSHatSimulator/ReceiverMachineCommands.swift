// What the simulated receiver does with the host's bytes: wakes up, or decodes them and answers and
// obeys the UBX and PMTK commands among them.
import GNSSProtocol

extension ReceiverMachine {
    // MARK: Host bytes

    mutating func receive(_ bytes: [UInt8], now: Duration, output: inout ReceiverOutput) {
        guard mainPower, !reset, !bytes.isEmpty else { return }
        switch mode {
        case .off, .booting, .perpetualBackup:
            return
        case .backup:
            // The bytes that wake a u-blox are lost.
            if backupWake.contains(.uartRX) { boot(now: now) }
            return
        case .standby:
            if !isUBlox, !standbyLine { wakeFromStandby(now: now, output: &output) }
            return
        case .acquiring, .tracking, .gnssStopped, .powerSave:
            // In power save the first byte wakes the interface, and nothing is lost here.
            break
        }
        if silent { return }
        let failuresBefore = intake.statistics.framer.checksumFailures
        intake.append(contentsOf: bytes)
        defer {
            // The host sends well-formed UBX: a frame that failed its checksum was RTCM 3 (CRC-24Q).
            rtcmFailedCRC(intake.statistics.framer.checksumFailures - failuresBefore, now: now, output: &output)
        }
        while let decoded = intake.next() {
            // A command is acted on at once and never kept, so it may share the decoder's buffer.
            guard case .message(let message) = decoded else { continue }
            handle(message, now: now, output: &output)
            // A command may have put the receiver to sleep: the rest is not read.
            if mode == .backup || mode == .standby || mode == .perpetualBackup || mode == .booting { break }
        }
    }

    mutating func handle(_ message: Message, now: Duration, output: inout ReceiverOutput) {
        switch message {
        case .ubx(let ubx) where isUBlox:
            handleUBX(ubx, now: now, output: &output)
        case .nmea(.pmtk(let pmtk)) where !isUBlox:
            handlePMTK(pmtk, now: now, output: &output)
        case .rtcm3(let frame) where isUBlox:
            receiveRTCM(frame, now: now, output: &output)
        default:
            return
        }
    }

    mutating func acknowledge(_ id: UBX.MessageID, now: Duration, output: inout ReceiverOutput) {
        if ignoreConfiguration { return }
        let ack = UBXAck(id)
        send(rejectConfiguration ? ack.nakFrame : ack.ackFrame, now: now, output: &output)
    }

    mutating func handleUBX(_ message: UBXMessage, now: Duration, output: inout ReceiverOutput) {
        switch message {
        case .poll(.monVER):
            commands.append("MON-VER poll")
            let version = UBXMonVER(
                softwareVersion: "ROM CORE 1.00 (simulated)", hardwareVersion: "00190000",
                extensions: ["FWVER=SIM 1.00", "PROTVER=" + String(format2: protocolVersion), "MOD=" + settings.model])
            send(version.frame, now: now, output: &output)
        case .cfgValSet(let valset):
            commands.append("CFG-VALSET")
            handleValSet(valset, now: now, output: &output)
        case .cfgNavX5(let navx5):
            commands.append("CFG-NAVX5")
            if !rejectConfiguration && !ignoreConfiguration, navx5.mask1 & UBXCfgNavX5.applyAckAiding != 0 {
                ackAiding = navx5.ackAiding == 1
            }
            acknowledge(.cfgNAVX5, now: now, output: &output)
        case .cfgPM2, .cfgRXM, .cfgPMS:
            handlePowerSave(message, now: now, output: &output)
        case .poll(.mgaDBD):
            commands.append("MGA-DBD poll")
            dumpDatabase(now: now, output: &output)
        case .poll(.secUNIQID):
            commands.append("SEC-UNIQID poll")
            sendUniqueID(now: now, output: &output)
        case .mgaIniTimeUTC(let time):
            commands.append("MGA-INI-TIME_UTC")
            receiveTimeAiding(time, now: now, output: &output)
        case .mgaIniPosLLH(let position):
            commands.append("MGA-INI-POS_LLH")
            receivePositionAiding(position, now: now, output: &output)
        case .mgaDBD(let record):
            commands.append("MGA-DBD")
            receiveRecord(record, now: now, output: &output)
        case .cfgMsg(let msg):
            commands.append("CFG-MSG \(msg.message)")
            if !rejectConfiguration && !ignoreConfiguration {
                let rate = msg.rates.count == 1 ? msg.rates[0] : (msg.rates.count > 1 ? msg.rates[1] : 0)
                setUBXOutput(msg.message, rate > 0)
            }
            acknowledge(.cfgMSG, now: now, output: &output)
        case .cfgRate(let rate):
            commands.append("CFG-RATE")
            if !rejectConfiguration && !ignoreConfiguration, rate.measRate >= 25 {
                period = .milliseconds(Int(rate.measRate))
            }
            acknowledge(.cfgRATE, now: now, output: &output)
        case .cfgPrt:
            commands.append("CFG-PRT")
            acknowledge(.cfgPRT, now: now, output: &output)
        case .cfgRst(let rst):
            commands.append("CFG-RST \(rst.resetMode)")
            handleReset(rst, now: now)
        case .rxmPMREQ(let request):
            commands.append("RXM-PMREQ")
            handlePowerRequest(request, now: now)
        case .other(let id, _) where id.messageClass == UBX.Class.cfg:
            commands.append("\(id)")
            send(UBXAck(id).nakFrame, now: now, output: &output)
        default:
            return
        }
    }

    /// CFG-VALSET: applied whole or not at all, acknowledged or refused.
    mutating func handleValSet(_ valset: UBXCfgValSet, now: Duration, output: inout ReceiverOutput) {
        let powerSaveKeys = valset.items.contains { Self.isPowerSaveKey($0.key) }
        // A CFG-VALSET is applied whole or not at all: one refused key refuses it.
        guard protocolVersion >= 27, !(powerSaveKeys && refusePowerSave) else {
            if !ignoreConfiguration { send(UBXAck(.cfgVALSET).nakFrame, now: now, output: &output) }
            return
        }
        let applied = !rejectConfiguration && !ignoreConfiguration
        if applied {
            for item in valset.items { apply(item) }
        }
        acknowledge(.cfgVALSET, now: now, output: &output)
        if applied, powerSaveKeys { applyPowerSaveKeys(now: now) }
    }

    /// CFG-RST: GNSS stop (0x08) or start (0x09), else a restart (a cold one when it clears everything).
    mutating func handleReset(_ rst: UBXCfgRst, now: Duration) {
        switch rst.resetMode {
        case 0x08:
            if mode == .acquiring || mode == .tracking || mode == .powerSave { enter(.gnssStopped, now: now) }
        case 0x09:
            if mode == .gnssStopped { resume(now: now) }
        default:
            if rst.navBbrMask == 0xFFFF {
                ephemerisUntil = nil
                almanac = false
            }
            boot(now: now)
        }
    }

    /// RXM-PMREQ: into backup, for its duration or until a wake source sees traffic.
    mutating func handlePowerRequest(_ request: UBXRxmPmReq, now: Duration) {
        guard request.flags & UBXRxmPmReq.flagBackup != 0 else { return }
        backupWake = request.wakeupSources ?? [.uartRX, .extint0]
        backupUntil = request.duration > 0 ? now + .milliseconds(Int(request.duration)) : nil
        enter(.backup, now: now)
    }

    mutating func apply(_ item: UBXConfigItem) {
        if applyRTK(item) { return }
        switch item.key {
        case UBXConfigItem.rateMeas:
            if item.value >= 25 { period = .milliseconds(Int(item.value)) }
        case 0x2091_0006, 0x2091_0007: setUBXOutput(.navPVT, item.value > 0)
        case 0x2091_0015, 0x2091_0016: setUBXOutput(.navSAT, item.value > 0)
        case 0x2091_005B, 0x2091_005C: setUBXOutput(.navTimeUTC, item.value > 0)
        case UBXConfigItem.navspgAckAiding: ackAiding = item.value != 0
        case UBXConfigItem.pmOperateMode: powerSave.operateMode = item.value
        case UBXConfigItem.pmPosUpdatePeriod: powerSave.positionUpdatePeriod = item.value
        default: return
        }
    }

    mutating func setUBXOutput(_ id: UBX.MessageID, _ on: Bool) {
        if on { ubxOutput.insert(id) } else { ubxOutput.remove(id) }
    }

    mutating func handlePMTK(_ message: PMTKMessage, now: Duration, output: inout ReceiverOutput) {
        guard case .other(let number, let fields) = message else { return }
        commands.append("PMTK\(number)")
        func ack(_ flag: Int) {
            send(PMTKMessage.ack(command: number, flag: flag).sentence(), now: now, output: &output)
        }
        switch number {
        case 0:
            ack(3)
        case 314, 220:
            if ignoreConfiguration { return }
            if rejectConfiguration { return ack(2) }
            if number == 314 {
                let rates = fields.map { Int($0) ?? 0 }
                if rates.count >= 6 {
                    mtkRates = PMTK.SentenceRates(gll: rates[0], rmc: rates[1], vtg: rates[2], gga: rates[3],
                                                  gsa: rates[4], gsv: rates[5], zda: rates.count > 17 ? rates[17] : 0)
                }
            } else if let milliseconds = fields.first.flatMap({ Int($0) }), milliseconds >= 100 {
                period = .milliseconds(milliseconds)
            }
            ack(3)
        case 161:
            ack(3)
            enter(.standby, now: now)
        case PMTKPeriodicMode.number:
            handlePeriodicMode(message, now: now, output: &output)
        case PMTKTimeAiding.number, PMTKPositionAiding.number:
            receiveMTKAiding(message, now: now, output: &output)
        case 101, 102, 103:
            if number == 103 {
                ephemerisUntil = nil
                almanac = false
            }
            boot(now: now)
        case 605:
            send(PMTKMessage.firmware(release: "AXN_5.1.7_3333_19020118", buildID: "0027", model: settings.model,
                                      extra: ["1.0"]).sentence(), now: now, output: &output)
        default:
            ack(1)
        }
    }
}
