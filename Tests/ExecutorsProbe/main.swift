// thread-executors-probe: installs ThreadExecutors as gnss-hat's main.swift does and reports, one
// line each, the thread every kind of suspension resumed on, then every thread the process has.
// LinuxSystemTests.ThreadExecutorInstallTests runs it: on Swift 6.3 the executor factory and on
// Swift 6.2 the runtime's global-executor hook must keep every job on our threads, with no
// libdispatch worker. On 6.2 `Task.sleep`, the standard clocks' sleeps and the main actor still go
// to libdispatch (see ThreadExecutors.swift), so there the probe uses only what gnss-hat uses.
import Glibc
import LinuxSystem

/// The name of the calling thread (`/proc/thread-self/comm`).
func threadName() -> String {
    (try? FileSystem.contents(of: "/proc/thread-self/comm")).map {
        String(decoding: $0.filter { $0 != 0x0A }, as: UTF8.self)
    } ?? "?"
}

/// The names of every thread of this process (`/proc/self/task/*/comm`).
func allThreadNames() -> [String] {
    guard let directory = opendir("/proc/self/task") else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let id = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard id.first?.isNumber == true,
              let comm = try? FileSystem.contents(of: "/proc/self/task/\(id)/comm") else { continue }
        names.append(String(decoding: comm.filter { $0 != 0x0A }, as: UTF8.self))
    }
    return names.sorted()
}

actor Counter {
    var value = 0
    func increment() -> String {
        value += 1
        return threadName()
    }
}

@MainActor func onMain() -> String { threadName() }

do {
    try ThreadExecutors.install(workers: 2)
} catch {
    print("install failed: \(error)")
    exit(1)
}
/// Collects the report; each line also goes to standard error as it comes, so a hang shows where.
struct Report {
    var lines: [String] = []
    mutating func append(_ line: String) {
        lines.append(line)
        StandardStream.error.write(line + "\n")
    }
}

let lines = ThreadExecutors.runMain { () async -> [String] in
    var lines = Report()
    lines.append("start \(threadName())")
    let start = ContinuousClock.now
    try? await TimerThreadClock().sleep(for: .milliseconds(5))
    lines.append("timer-thread-clock \(threadName())")
    lines.append("timer-thread-clock-slept-enough \(ContinuousClock.now - start >= .milliseconds(5))")
    #if compiler(>=6.3)
    try? await Task.sleep(for: .milliseconds(5))
    lines.append("task-sleep-for \(threadName())")
    try? await Task.sleep(nanoseconds: 5_000_000)
    lines.append("task-sleep-nanoseconds \(threadName())")
    try? await ContinuousClock().sleep(for: .milliseconds(5))
    lines.append("continuous-clock \(threadName())")
    try? await SuspendingClock().sleep(for: .milliseconds(5))
    lines.append("suspending-clock \(threadName())")
    lines.append("main-actor \(await onMain())")
    #endif
    let counter = Counter()
    lines.append("actor \(await counter.increment())")
    let group = await withTaskGroup(of: String.self) { group in
        for _ in 0..<50 { group.addTask { threadName() } }
        var names: Set<String> = []
        for await name in group { names.insert(name) }
        return names.sorted().joined(separator: ",")
    }
    lines.append("task-group \(group)")
    lines.append("detached \(await Task.detached { threadName() }.value)")
    let cancelled = Task { () -> String in
        do {
            try await TimerThreadClock().sleep(for: .seconds(3600))
            return "slept"
        } catch {
            return "cancelled"
        }
    }
    cancelled.cancel()
    lines.append("cancelled-sleep \(await cancelled.value)")
    // A sleep cancelled while it waits: its timer is withdrawn, so the timer thread has none left.
    let waiting = Task { () -> String in
        do {
            try await TimerThreadClock().sleep(for: .seconds(3600))
            return "slept"
        } catch {
            return "cancelled"
        }
    }
    try? await TimerThreadClock().sleep(for: .milliseconds(5))
    waiting.cancel()
    lines.append("cancelled-waiting-sleep \(await waiting.value)")
    lines.append("timers-pending \(ThreadExecutors.pendingTimers)")
    lines.append("threads \(allThreadNames().joined(separator: ","))")
    return lines.lines
}
for line in lines { print(line) }
