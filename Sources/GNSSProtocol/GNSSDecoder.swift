// The one pipeline from a receiver's bytes to what they mean: frames (Framer), messages (Message), and
// the fixes and sky views of navigation epochs (EpochAssembler), with the counters of every stage.

/// Decodes a receiver's byte stream into messages and the fixes and sky views of its navigation epochs.
///
/// Feed it any chunks with `append`, then call `next()` until it returns `nil` ("need more"); `finish()`
/// ends the stream and lets `next()` yield the epoch in progress. Each message comes out first, then what
/// it brought about, in order: `epochStarted` when it is the first message since an epoch ended, the
/// epochs it ended (the one before it, and its own when it is the cycle's last message), and (on request)
/// the provisional fix of the epoch in progress.
///
/// It adds no allocation per frame to those of decoding and assembly: its queue keeps its storage, and a
/// message kept whole (see `Message.owned`) is a slice of the framer's buffer, valid until the next
/// `append`. An epoch or provisional fix is boxed, one allocation each (see `Output`).
public struct GNSSDecoder: Sendable {
    public struct Options: Hashable, Sendable {
        /// The framer's bounds on frame lengths.
        public var limits: Framer.Limits
        /// How messages become epochs.
        public var assembly: EpochAssembler.Options
        /// Also yield the fix of each epoch in progress as soon as it has a position (`provisionalFix`).
        public var provisionalFixes: Bool

        public init(
            limits: Framer.Limits = Framer.Limits(), assembly: EpochAssembler.Options = EpochAssembler.Options(),
            provisionalFixes: Bool = false
        ) {
            self.limits = limits
            self.assembly = assembly
            self.provisionalFixes = provisionalFixes
        }
    }

    /// One thing the stream said. The epoch and provisional fix cases are indirect: a fix is over 500 bytes,
    /// and inline it would make every output that wide, messages included, and every copy of one as long.
    public enum Output: Hashable, Sendable {
        /// A decoded message, in arrival order.
        case message(Message)
        /// A frame whose checksum was right but whose content did not decode.
        case undecodable(Frame.Kind, DecodeError)
        /// The message just yielded is the first since an epoch ended: a receiver's output for the next epoch
        /// begins with it (its arrival is the epoch's, as gpsd takes the start of a cycle for TOFF). The
        /// epochs that end from here on, up to the next `epochStarted`, began with it.
        case epochStarted
        /// The fix of the epoch in progress, the first time it has a position (`Options.provisionalFixes`);
        /// the complete fix follows when the epoch ends. Not after a message that ended an epoch: the next
        /// message gives the new epoch's.
        indirect case provisionalFix(Fix)
        /// A navigation epoch ended: its fix and sky view (either may be absent; both, for an epoch of
        /// messages that carry neither, such as GST alone).
        indirect case epoch(Epoch)
    }

    /// What the decoder has seen and yielded.
    public struct Statistics: Sendable, Hashable {
        /// Frames per protocol and the bytes thrown away.
        public var framer = FramerStatistics()
        /// Messages yielded, and frames that did not decode.
        public var messages = 0
        public var decodeErrors = 0
        /// Epochs ended; of them, those with a fix, with a fix that has a position, and with a sky view.
        public var epochs = 0
        public var fixes = 0
        public var fixesWithPosition = 0
        public var skyViews = 0
        /// Provisional fixes yielded.
        public var provisionalFixes = 0

        public init() {}
    }

    public let options: Options
    private var framer: Framer
    private var assembler: EpochAssembler
    private var queue = OutputQueue()
    private var counts = Statistics()
    /// `finish()` was called and no byte came since.
    private var finishing = false
    /// The epoch in progress was closed for this `finish()`.
    private var flushed = false
    /// No message came since the last epoch ended (or the stream began): the next one starts an epoch.
    private var betweenEpochs = true

    public init(options: Options = Options()) {
        self.options = options
        // The buffer the limits need (two of the longest UBX frames; 16 KiB for the default limits): a decoder
        // made for shorter frames does not zero 16 KiB it will not use.
        framer = Framer(limits: options.limits, initialCapacity: 0)
        assembler = EpochAssembler(options: options.assembly)
    }

    /// The counters of every stage so far.
    public var statistics: Statistics {
        var statistics = counts
        statistics.framer = framer.statistics
        return statistics
    }

    /// Appends bytes from the receiver.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        framer.append(bytes)
        finishing = false
    }

    /// Appends bytes from the receiver.
    public mutating func append<Bytes: Collection<UInt8>>(contentsOf bytes: Bytes) {
        bytes.withRawBytes { append($0) }
    }

    /// Declares the end of the stream: partial frames are dropped and the epoch in progress ends.
    public mutating func finish() {
        framer.finish()
        finishing = true
        flushed = false
    }

    /// Drops the bytes not yet framed (after a speed change or a reconnect). The epoch in progress, the
    /// outputs already due and the counters are kept.
    public mutating func reset() {
        framer.reset()
    }

    /// The next output, or `nil` when more bytes are needed.
    public mutating func next() -> Output? {
        if let queued = queue.pop() { return counted(queued) }
        guard let frame = framer.next() else {
            guard finishing, !flushed else { return nil }
            flushed = true
            return assembler.finish().map { counted(.epoch($0)) }
        }
        let message: Message
        do {
            message = try Message(frame: frame)
        } catch {
            counts.decodeErrors += 1
            return .undecodable(frame.kind, error)
        }
        counts.messages += 1
        if betweenEpochs {
            queue.push(.epochStarted)
            betweenEpochs = false
        }
        let ended = queue.epochsEnded
        assembler.consume(message, into: &queue)
        if queue.epochsEnded != ended {
            // The next message starts the next epoch, and gives its provisional fix.
            betweenEpochs = true
        } else if options.provisionalFixes, let fix = assembler.provisionalFix() {
            queue.push(.provisionalFix(fix))
        }
        return .message(message)
    }

    /// Counts an epoch or provisional fix as it is yielded.
    private mutating func counted(_ output: Output) -> Output {
        switch output {
        case .epoch(let epoch):
            counts.epochs += 1
            if let fix = epoch.fix {
                counts.fixes += 1
                if fix.hasPosition { counts.fixesWithPosition += 1 }
            }
            if epoch.sky != nil { counts.skyViews += 1 }
        case .provisionalFix:
            counts.provisionalFixes += 1
        case .message, .undecodable, .epochStarted:
            break
        }
        return output
    }
}

/// The outputs a message brought about, yielded after it (at most three: an epoch started, and two ended
/// or one and a provisional fix). The storage is kept between messages, so it allocates once.
private struct OutputQueue: EpochSink, Sendable {
    private var items: [GNSSDecoder.Output] = []
    private var head = 0
    /// Epochs ended so far (wrapping).
    private(set) var epochsEnded = 0

    mutating func push(_ output: GNSSDecoder.Output) {
        items.append(output)
    }

    mutating func pop() -> GNSSDecoder.Output? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return item
    }

    mutating func epochEnded(_ epoch: Epoch) {
        epochsEnded &+= 1
        push(.epoch(epoch))
    }
}
