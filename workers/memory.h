#pragma once
// How the workers' processes keep memory they freed.

#include <malloc.h>

namespace tessel::workers {

// LibTorch allocates every activation and gradient afresh each step. glibc serves blocks
// above its mmap threshold (128 KiB at start, raised as such blocks are freed) with mmap
// and trims free memory at the top of the heap, so each step faulted its memory in again,
// zeroed by the kernel: with the model of bench/workers, training ran at 0.6-0.7x of
// Python PyTorch. Keeping it (blocks up to 32 MiB, glibc's maximum, come from the heap,
// which is trimmed only past 1 GiB free) made training 2.3x faster. Call first in main();
// false when glibc refused (the workers then run as before).
inline bool keep_freed_memory() {
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
}

}  // namespace tessel::workers
