#ifndef PEOPLEKEEPER_CMALLOCINFO_H
#define PEOPLEKEEPER_CMALLOCINFO_H

#include <stddef.h>

/// Bytes the C library's malloc has handed out and not had back, over every arena and the chunks it
/// mapped on their own (glibc's mallinfo2: uordblks + hblkhd). Unlike the resident size it falls as
/// soon as memory is freed. 0 where the C library cannot say (not glibc 2.33 or later).
size_t pk_heap_in_use(void);

/// Hands the free pages malloc keeps back to the kernel (glibc's malloc_trim(0)); nothing elsewhere.
void pk_release_free_heap(void);

#endif
