// The process's scheduling priority. gpsd, started as root, lowers its nice value to -10 so that
// the moment a sentence arrives is not lost behind other work; a service that reports time and
// position should be able to do the same.
internal import CLinuxShims
internal import Glibc

/// The nice value of every thread of this process.
public enum SchedulingPriority {
    /// Sets the nice value of every thread of the process (`setpriority(PRIO_PROCESS, tid, ...)`
    /// for each of `/proc/self/task`: on Linux a nice value belongs to a thread) so that threads
    /// started afterwards inherit it. Lowering it needs root or `CAP_SYS_NICE` (a systemd unit's
    /// `Nice=` sets it before the service starts instead). Throws the first failure, having tried
    /// every thread (`EACCES`/`EPERM` without the privilege).
    public static func setNice(_ value: Int32) throws(Errno) {
        let tasks: [String]
        do {
            tasks = try FileSystem.entries(of: "/proc/self/task")
        } catch {
            throw error.failure.errno ?? .ioError
        }
        var failure: Errno?
        for task in tasks {
            guard let tid = id_t(task) else { continue }
            if let errno = system_setpriority(tid, value) { failure = failure ?? errno }
        }
        if let failure { throw failure }
    }

    /// The calling thread's nice value (`getpriority`).
    public static var currentNice: Int32 {
        Errno.current = Errno(rawValue: 0)
        return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }
}

/// `setpriority(PRIO_PROCESS, tid, value)`; the errno on failure.
func system_setpriority(_ tid: id_t, _ value: Int32) -> Errno? {
    if let errno = seamEnter("setpriority", "thread \(tid)") { return errno }
    return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, value) == 0 ? nil : Errno.current
}
