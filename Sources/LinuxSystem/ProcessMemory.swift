// The C heap of this process. glibc's malloc gives each thread that allocates an arena of its own
// (up to eight per core), each keeping pages it rarely gives back. gnss-hat has a handful of
// threads that mostly sleep and allocate little. Measured on serve while streaming (static
// binary): its heap, stacks and other anonymous memory came to 644 KiB with eight arenas and
// 598 KiB with one (the main heap grows by most of what the other arenas held).
internal import CLinuxShims

/// The layout of the process's C heap (malloc).
public enum ProcessMemory {
    /// Makes every thread allocate from one malloc arena (`mallopt(M_ARENA_MAX, 1)` on glibc; musl
    /// has one heap already). Call it before starting threads: arenas that exist are not merged.
    /// Returns whether the C library accepted it.
    @discardableResult
    public static func useOneHeapArena() -> Bool {
        cshim_limit_malloc_arenas(1) == 1
    }
}
