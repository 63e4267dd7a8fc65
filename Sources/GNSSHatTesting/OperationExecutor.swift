// Where a HatDriver runs the operations it drives: an executor that counts the jobs it holds, so
// that the driver sees when an operation (and its child tasks) has nothing left to run until
// something resumes it.
import Dispatch
import GNSSHat
import LinuxSystem
import Signals

/// A task executor that runs each job on Dispatch's global queue and counts the jobs queued or
/// running: idle when it holds none. Tasks that prefer it (`Task(executorPreference:)`, and the
/// child tasks of those) run here; unstructured tasks they start do not.
final class OperationExecutor: TaskExecutor, ActivityReporting {
    private struct State {
        var jobs = 0
        var changes: UInt64 = 0
    }

    private let state = Lock(State())
    private let waiters = ConditionWaiters()

    func enqueue(_ job: consuming ExecutorJob) {
        // Counted before it is handed on: whoever resumed the task sees the executor busy at once.
        count(+1)
        let job = UnownedJob(job)
        DispatchQueue.global().async { [self] in
            job.runSynchronously(on: asUnownedTaskExecutor())
            count(-1)
        }
    }

    var activity: Activity {
        state.withLock { Activity(isIdle: $0.jobs == 0, changes: $0.changes) }
    }

    func waitForActivity(after changes: UInt64) async {
        await waiters.wait { state.withLock { $0.changes } != changes }
    }

    private func count(_ step: Int) {
        state.withLock { state in
            state.jobs += step
            state.changes &+= 1
        }
        waiters.resumeAll()
    }
}
