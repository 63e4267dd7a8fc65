#define _GNU_SOURCE
#include "CLinuxShims.h"
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unistd.h>
#include <stdio.h>
#include <sys/file.h>

// Swift reads these structs through the imported headers; the asserts pin the layouts the
// kernel ABI (x86-64, arm64, armhf) expects, so a header mix-up fails the build, not a transfer.
_Static_assert(sizeof(struct pps_ktime) == 16, "pps_ktime is 16 bytes");
_Static_assert(sizeof(struct pps_kinfo) == 48, "pps_kinfo is 48 bytes");
_Static_assert(sizeof(struct pps_fdata) == 64, "pps_fdata is 64 bytes");
_Static_assert(sizeof(struct pps_kparams) == 40, "pps_kparams is 40 bytes");
_Static_assert(sizeof(((struct i2c_msg *)0)->len) == 2, "i2c_msg.len is a __u16");
_Static_assert(I2C_M_RD == 1, "I2C_M_RD is 1");
// chrony reads exactly sizeof(struct sock_sample): 40 bytes where timeval is 16 (64-bit time_t).
_Static_assert(sizeof(struct timeval) != 16 || sizeof(struct cshim_chrony_sample) == 40,
               "chrony sock_sample is 40 bytes with a 16-byte timeval");

int cshim_ioctl_ptr(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}

const char *cshim_strerror(int errnum, char *buf, size_t len) {
    return strerror_r(errnum, buf, len);
}

int cshim_posix_openpt(int flags) { return posix_openpt(flags); }
int cshim_grantpt(int fd) { return grantpt(fd); }
int cshim_unlockpt(int fd) { return unlockpt(fd); }
int cshim_ptsname_r(int fd, char *buf, size_t len) { return ptsname_r(fd, buf, len); }

void cshim_cfmakeraw(struct termios *t) { cfmakeraw(t); }

unsigned long cshim_request_TIOCGEXCL(void) { return TIOCGEXCL; }
unsigned long cshim_request_PPS_GETPARAMS(void) { return PPS_GETPARAMS; }
unsigned long cshim_request_PPS_SETPARAMS(void) { return PPS_SETPARAMS; }
unsigned long cshim_request_PPS_GETCAP(void) { return PPS_GETCAP; }
unsigned long cshim_request_PPS_FETCH(void) { return PPS_FETCH; }

int cshim_flock(int fd, int operation) {
    return flock(fd, operation);
}

int cshim_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return accept4(fd, addr, len, flags);
}

// The pipe each handled signal is written to (one per signal number; a handler reads only this).
static volatile sig_atomic_t cshim_signal_fds[65];

static void cshim_signal_handler(int signo) {
    int saved = errno;
    if (signo > 0 && signo < 65 && cshim_signal_fds[signo] >= 0) {
        unsigned char byte = (unsigned char)signo;
        ssize_t ignored = write(cshim_signal_fds[signo], &byte, 1);
        (void)ignored;
    }
    errno = saved;
}

int cshim_notify_signal_on_fd(int signo, int fd) {
    if (signo <= 0 || signo >= 65) {
        errno = EINVAL;
        return -1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    cshim_signal_fds[signo] = fd;
    action.sa_handler = fd >= 0 ? cshim_signal_handler : SIG_DFL;
    if (sigaction(signo, &action, NULL) != 0) return -1;
    if (fd < 0) return 0;
    // A parent may have started this process with the signal blocked (posix_spawn keeps the
    // spawning thread's mask): unblock it in this thread, and threads started later inherit that.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    int code = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    if (code != 0) {
        errno = code;
        return -1;
    }
    return 0;
}

int cshim_set_thread_name(const char *name) {
    int code = pthread_setname_np(pthread_self(), name);
    if (code != 0) {
        errno = code;
        return -1;
    }
    return 0;
}

int cshim_limit_malloc_arenas(int count) {
#ifdef __GLIBC__
    return mallopt(M_ARENA_MAX, count);
#else
    // musl's malloc has one heap for every thread: nothing to limit.
    (void)count;
    return 1;
#endif
}

// The runtime's global-executor hook (swift/Runtime/ConcurrencyHooks.def): Swift calling
// convention; the job is opaque here.
typedef __attribute__((swiftcall)) void (*cshim_original_enqueue)(void *job);
extern __attribute__((swiftcall)) void (*swift_task_enqueueGlobal_hook)(void *job, cshim_original_enqueue original);

static cshim_job_sink global_sink;

static __attribute__((swiftcall)) void enqueue_global(void *job, cshim_original_enqueue original) {
    (void)original;
    global_sink(job);
}

void cshim_install_global_executor_hook(cshim_job_sink sink) {
    global_sink = sink;
    swift_task_enqueueGlobal_hook = enqueue_global;
}
