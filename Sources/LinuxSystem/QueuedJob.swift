// A job handed between the executors' threads, and the executor that runs it.

/// A job and the executor that runs it.
struct QueuedJob: @unchecked Sendable {
    // An UnownedJob is handed from thread to thread and run exactly once.
    let job: UnownedJob
    let executor: JobExecutor

    func run() {
        switch executor {
        case .task(let pool): job.runSynchronously(on: pool.asUnownedTaskExecutor())
        case .main(let main): job.runSynchronously(on: main.asUnownedSerialExecutor())
        }
    }
}

enum JobExecutor: Sendable {
    case task(ThreadPoolExecutor)
    case main(MainThreadExecutor)

    func put(_ job: QueuedJob) {
        switch self {
        case .task(let pool): pool.put(job)
        case .main(let main): main.put(job)
        }
    }
}
