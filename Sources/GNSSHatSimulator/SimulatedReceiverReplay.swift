// A capture a simulated receiver plays back instead of its scripted trajectory.

extension SimulatedReceiver {
    /// A capture played back instead of the scripted trajectory.
    public struct Replay: Sendable {
        /// The captured bytes (NMEA, UBX, RTCM 3 as the receiver sent them); played in a loop.
        public var bytes: [UInt8]
        /// How fast: the line's speed in bytes per second (960 for 9600 baud), or faster.
        public var bytesPerSecond: Int

        public init(bytes: [UInt8], bytesPerSecond: Int = 960) {
            self.bytes = bytes
            self.bytesPerSecond = max(bytesPerSecond, 1)
        }
    }
}
