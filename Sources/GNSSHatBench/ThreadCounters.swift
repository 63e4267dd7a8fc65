// Per-thread context switches and CPU time of a process, from /proc/PID/task.
import Foundation

/// The context switches and CPU time of every thread of a process over a window, threads that start
/// or end in it included: /proc/PID/task/* is sampled at the start, once per epoch (``sample()``)
/// and at the end, and each thread counts from its first sample (or from zero if it started in the
/// window) to its last. A thread that ends loses only what it did after its last sample, within an
/// epoch. (`perf stat -p` was tried instead: it did not count the threads a process started after it
/// attached.) CPU time is the scheduler's own account of each thread's time on a CPU, user and kernel
/// (the first field of /proc/PID/task/TID/schedstat, in nanoseconds): `utime` and `stime` of
/// /proc/PID/stat count 10 ms ticks, and a service busy for a fraction of a millisecond per epoch
/// would be measured in a dozen of them.
final class ThreadCounters {
    struct Counters {
        var switches = 0
        /// The voluntary ones: the thread went to sleep (to wait for input, a timer, a lock), so it was
        /// woken after; the others are preemptions, which count the machine's load more than the service.
        var wakeUps = 0
        var runNanoseconds = 0
    }

    private let pid: Int32
    private var first: [String: Counters]
    private var last: [String: Counters]
    /// Threads that started or ended in the window.
    private(set) var started = 0
    private(set) var ended = 0

    init(pid: Int32) {
        self.pid = pid
        first = Self.perThread(pid)
        last = first
    }

    /// Samples every thread's counters now; returns the threads alive.
    @discardableResult
    func sample() -> Set<String> {
        let now = Self.perThread(pid)
        for (thread, counters) in now {
            if last[thread] == nil { started += 1 }
            last[thread] = counters
        }
        return Set(now.keys)
    }

    /// Ends the window: the switches and CPU seconds of every thread seen in it. With
    /// GNSSHAT_BENCH_THREADS set, prints them by thread name too.
    func stop() -> (switches: Int, wakeUps: Int, cpuSeconds: Double) {
        let alive = sample()
        ended = last.keys.filter { !alive.contains($0) }.count
        let byThreadName = ServiceBenchmark.environment["GNSSHAT_BENCH_THREADS"] != nil
        var switches = 0
        var wakeUps = 0
        var nanoseconds = 0
        var byName: [String: Counters] = [:]
        for (thread, counters) in last {
            let threadSwitches = counters.switches - (first[thread]?.switches ?? 0)
            let threadWakeUps = counters.wakeUps - (first[thread]?.wakeUps ?? 0)
            let threadNanoseconds = counters.runNanoseconds - (first[thread]?.runNanoseconds ?? 0)
            switches += threadSwitches
            wakeUps += threadWakeUps
            nanoseconds += threadNanoseconds
            guard byThreadName else { continue }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "ended"
            byName[name, default: Counters()].switches += threadSwitches
            byName[name, default: Counters()].wakeUps += threadWakeUps
            byName[name, default: Counters()].runNanoseconds += threadNanoseconds
        }
        if byThreadName {
            // Where the time went, by thread name (threads that ended meanwhile: "ended").
            let lines = byName.sorted { $0.value.runNanoseconds > $1.value.runNanoseconds }.map {
                String(format: "%@ %.1f ms %d switches (%d wake-ups)", $0.key,
                       Double($0.value.runNanoseconds) / 1e6, $0.value.switches, $0.value.wakeUps)
            }
            print("threads of \(pid): " + lines.joined(separator: "; "))
        }
        return (switches, wakeUps, Double(nanoseconds) / 1e9)
    }

    /// Each thread's voluntary plus involuntary switches (/proc/PID/task/TID/status) and time on a
    /// CPU (/proc/PID/task/TID/schedstat) now, by thread id.
    static func perThread(_ pid: Int32) -> [String: Counters] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var threads: [String: Counters] = [:]
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                  let schedstat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)
            else { continue }
            var counters = Counters()
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                let count = Int(line.split(separator: "\t").last ?? "") ?? 0
                counters.switches += count
                if line.hasPrefix("voluntary_ctxt_switches:") { counters.wakeUps += count }
            }
            counters.runNanoseconds = schedstat.split(separator: " ").first.flatMap { Int($0) } ?? 0
            threads[task] = counters
        }
        return threads
    }
}
