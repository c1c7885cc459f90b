#define _GNU_SOURCE
#include "CMallocInfo.h"
#include <malloc.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
size_t pk_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

void pk_release_free_heap(void) {
    malloc_trim(0);
}
#else
size_t pk_heap_in_use(void) { return 0; }
void pk_release_free_heap(void) {}
#endif
