import GNSSHat
import PiHardware
import Testing

/// The hardware-in-loop rig's guest-only boards (scripts/hil/boards, installed in the guest's
/// /etc/gnss-hat/boards): checked here so that a broken file fails before a VM boots.
@Suite("Hardware-in-loop rig boards")
struct RigBoardTests {
    static let directory = packageRoot + "/scripts/hil/boards"

    @Test("the rig's board files load by name from their directory, on the simulated hat's lines")
    func rigBoards() throws {
        let ddc = try BoardCatalog.load("hil-ddc", searchDirectories: [Self.directory])
        let uart = try BoardCatalog.load("hil-uart", searchDirectories: [Self.directory])
        #expect(ddc.link == .i2c(Board.I2C(bus: 1, address: 0x42)))
        #expect(uart.link == .uart(Board.UART(path: "/tmp/hil-uart", baud: 115_200, detectSpeed: false)))
        for board in [ddc, uart] {
            #expect(board.gpio.chip == .label("gnss-hat-sim"))
            #expect(board.gpio.enable == Board.Line(.name("GNSS_PWR_EN")))
            #expect(board.gpio.reset == Board.Line(.name("GNSS_RESET_N"), activeLow: true))
            #expect(board.power.strategies == [.gpioEnable])
            // Short enough for the scenarios under TCG, long enough to be seen lingering.
            #expect(board.power.linger == .seconds(1))
        }
    }
}
