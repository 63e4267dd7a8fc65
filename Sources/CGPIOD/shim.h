#ifndef GNSSHAT_CGPIOD_SHIM_H
#define GNSSHAT_CGPIOD_SHIM_H
// libgpiod: 1.6 (v1 API) from Debian bookworm by default, 2.x (v2 API) when built with
// GNSSHAT_GPIOD_V2=1 against the private prefix under .build/libgpiod-v2/.
#include <gpiod.h>
#endif
