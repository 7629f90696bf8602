#ifndef GRAPHSTORE_COMMON_HEAP_RETENTION_H_
#define GRAPHSTORE_COMMON_HEAP_RETENTION_H_

// How the process's allocator hands freed memory back to the kernel.
//
// gRPC reads every received message into slices it allocates, and frees them once the message
// is decoded: megabytes a message. With glibc's defaults a freed block at the top of a heap is
// given back to the kernel once 128 KiB are free there, so the next message's slices are new
// pages again, each costing a page fault and zeroing as the socket's bytes are copied in. On a
// trainer reading 1.6 MB batches that was half a million faults in five seconds and a fifth of
// its throughput.

#include <cstddef>

namespace graphstore {

/// What RetainFreedHeap did.
enum class HeapRetention {
  kRetained,     ///< the thresholds below are now the process's
  kLeftToUser,   ///< the environment sets glibc's malloc thresholds itself: left as it says
  kUnsupported,  ///< not glibc's allocator: nothing to do
};

/// Once per process (later calls return the first call's answer): keeps up to `trim_bytes` of
/// freed memory at the top of each heap instead of giving it back to the kernel, and serves
/// blocks up to `mmap_bytes` from the heaps rather than from mappings of their own (setting
/// the first would otherwise pin glibc's mapping threshold at 128 KiB, and every larger block,
/// such as a tensor, would be mapped and faulted in afresh). Memory held this way is reused by
/// the next allocations; it is not a leak, but the process's resident size stays at its peak.
HeapRetention RetainFreedHeap(size_t trim_bytes = size_t{256} << 20, size_t mmap_bytes = size_t{32} << 20);

}  // namespace graphstore

#endif  // GRAPHSTORE_COMMON_HEAP_RETENTION_H_
