#ifndef GNSSHAT_CLINUXSHIMS_H
#define GNSSHAT_CLINUXSHIMS_H
// The few Linux calls Swift cannot make directly: variadic ioctl, function-like macros and
// calls that need _GNU_SOURCE. No logic lives here.
#include <stddef.h>

/// ioctl(2) with a pointer argument (Swift cannot call the variadic ioctl).
int cshim_ioctl_ptr(int fd, unsigned long request, void *arg);

#endif
