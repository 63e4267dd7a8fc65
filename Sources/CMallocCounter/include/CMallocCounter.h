#ifndef GNSSHAT_CMALLOCCOUNTER_H
#define GNSSHAT_CMALLOCCOUNTER_H

#include <stdint.h>

/// Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by the
/// process so far, counted by interposing those functions over glibc's (GNSSHatBench only).
/// Always 0 where the interposition is not built (non-glibc systems).
uint64_t gnsshat_allocation_count(void);

#endif
