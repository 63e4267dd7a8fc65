#ifndef GNSSHAT_CLINUXSHIMS_H
#define GNSSHAT_CLINUXSHIMS_H
// The few Linux calls Swift cannot make directly: variadic ioctl, function-like macros and
// calls that need _GNU_SOURCE. No logic lives here: each function is one call.
#include <stddef.h>
#include <termios.h>
#include <linux/pps.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
// adjtimex(2), struct timex and the STA_* bits: Glibc's module map leaves <sys/timex.h> out.
#include <sys/timex.h>

/// ioctl(2) with a pointer argument (Swift cannot call the variadic ioctl).
int cshim_ioctl_ptr(int fd, unsigned long request, void *arg);

/// strerror_r(3), GNU flavour: returns the message, which may or may not live in `buf`.
const char *cshim_strerror(int errnum, char *buf, size_t len);

/// flock(2): Swift imports `struct flock` (fcntl's lock record) under the same name and cannot call
/// the function.
int cshim_flock(int fd, int operation);

/// posix_openpt(3): opens a new pseudo-terminal controller (/dev/ptmx).
int cshim_posix_openpt(int flags);
/// grantpt(3): sets the owner and mode of the pseudo-terminal's device side.
int cshim_grantpt(int fd);
/// unlockpt(3): unlocks the device side so it can be opened.
int cshim_unlockpt(int fd);
/// ptsname_r(3) (needs _GNU_SOURCE): the path of the device side, e.g. /dev/pts/3.
int cshim_ptsname_r(int fd, char *buf, size_t len);

/// mallopt(M_ARENA_MAX, count) on glibc: at most `count` malloc arenas for all threads. Returns 1
/// on success, 0 on failure (mallopt's convention); 1 without glibc (musl has one heap).
int cshim_limit_malloc_arenas(int count);

/// cfmakeraw(3) (a BSD extension glibc only declares with _DEFAULT_SOURCE).
void cshim_cfmakeraw(struct termios *t);

// ioctl request numbers built with _IOR/_IOW/_IOWR, which Swift cannot import.
/// `TIOCGEXCL`: reads whether the tty is in exclusive mode.
unsigned long cshim_request_TIOCGEXCL(void);
/// `PPS_GETPARAMS`: reads `struct pps_kparams`.
unsigned long cshim_request_PPS_GETPARAMS(void);
/// `PPS_SETPARAMS`: writes `struct pps_kparams`.
unsigned long cshim_request_PPS_SETPARAMS(void);
/// `PPS_GETCAP`: reads the capability mode bits (an int).
unsigned long cshim_request_PPS_GETCAP(void);
/// `PPS_FETCH`: waits for the next event; reads and writes `struct pps_fdata`.
unsigned long cshim_request_PPS_FETCH(void);

// Sockets and the event loop.
/// accept4(2) (needs _GNU_SOURCE): accepts a connection with `flags` (SOCK_NONBLOCK, SOCK_CLOEXEC).
int cshim_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
/// Installs a handler for `signo` (sigaction(2), SA_RESTART) that writes the signal number as one
/// byte to `fd` (a non-blocking pipe) and does nothing else: the self-pipe trick, since a Swift
/// function cannot be an async-signal-safe handler. Also unblocks `signo` in the calling thread
/// (pthread_sigmask(3)), since a parent may have started the process with it blocked.
/// `fd` < 0 restores the default action.
int cshim_notify_signal_on_fd(int signo, int fd);
/// pthread_setname_np(3) for the calling thread (needs _GNU_SOURCE); names longer than 15 bytes fail.
int cshim_set_thread_name(const char *name);

/// chrony's SOCK refclock sample (chrony refclock_sock.c, `struct sock_sample`): one datagram per
/// sample on the refclock's Unix socket. Declared in C so the layout is the platform's, as chronyd's.
struct cshim_chrony_sample {
    /// System (CLOCK_REALTIME) time of the measurement.
    struct timeval tv;
    /// True time minus system time at `tv`, seconds.
    double offset;
    /// Non-zero when the sample is a pulse (PPS) whose whole seconds come from another source.
    int pulse;
    /// 0 normal, 1 insert a leap second, 2 delete a leap second.
    int leap;
    int _pad;
    /// CSHIM_CHRONY_SOCK_MAGIC.
    int magic;
};
#define CSHIM_CHRONY_SOCK_MAGIC 0x534f434b

// Swift concurrency's global-executor hook (the runtime's `swift_task_enqueueGlobal_hook`,
// swift/Runtime/ConcurrencyHooks.def), for toolchains without custom executor factories (Swift
// 6.2): ThreadExecutors runs the jobs of tasks without an actor on threads of its own through it.
/// Receives a job (a `swift::Job *`) for the global executor.
typedef void (*cshim_job_sink)(void *job);
/// Points the runtime's enqueueGlobal hook at a trampoline that hands each job to `sink`.
void cshim_install_global_executor_hook(cshim_job_sink sink);

#endif
