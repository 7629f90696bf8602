#ifndef GRAPHSTORE_SERVER_UTIL_PREFETCH_H_
#define GRAPHSTORE_SERVER_UTIL_PREFETCH_H_

// Asks the CPU for the cache line at `p` ahead of a read. On x86 an asm statement, which the
// compiler keeps: GCC 12 at -O2 deletes some __builtin_prefetch calls as dead code (two in a
// row whose addresses come from members, or one in a branch on a member), with nothing to show
// for it but misses (the partition book's lookups ran 3.8 times slower).

namespace graphstore {

inline void PrefetchRead(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 (%0)" : : "r"(p));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_PREFETCH_H_
