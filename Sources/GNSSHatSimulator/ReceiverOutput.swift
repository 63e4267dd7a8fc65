// What one change of a simulated receiver produced: bytes for its UART and pulses for its PPS line.
import PiHardware

/// What one change of the receiver produced, sent after its lock is released.
struct ReceiverOutput {
    var bytes: [UInt8] = []
    var pulses: [EdgeEvent] = []
}
