#ifndef GNSSHAT_CLINUXSHIMS_H
#define GNSSHAT_CLINUXSHIMS_H
// The few Linux calls Swift cannot make directly: variadic ioctl, function-like macros and
// calls that need _GNU_SOURCE. No logic lives here: each function is one call.
#include <stddef.h>
#include <termios.h>
#include <linux/pps.h>

/// ioctl(2) with a pointer argument (Swift cannot call the variadic ioctl).
int cshim_ioctl_ptr(int fd, unsigned long request, void *arg);

/// strerror_r(3), GNU flavour: returns the message, which may or may not live in `buf`.
const char *cshim_strerror(int errnum, char *buf, size_t len);

/// posix_openpt(3): opens a new pseudo-terminal controller (/dev/ptmx).
int cshim_posix_openpt(int flags);
/// grantpt(3): sets the owner and mode of the pseudo-terminal's device side.
int cshim_grantpt(int fd);
/// unlockpt(3): unlocks the device side so it can be opened.
int cshim_unlockpt(int fd);
/// ptsname_r(3) (needs _GNU_SOURCE): the path of the device side, e.g. /dev/pts/3.
int cshim_ptsname_r(int fd, char *buf, size_t len);

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

#endif
