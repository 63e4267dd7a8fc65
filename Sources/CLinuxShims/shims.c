#define _GNU_SOURCE
#include "CLinuxShims.h"
#include <sys/ioctl.h>

int cshim_ioctl_ptr(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}
