/* See asm/types.h. BPF longs are 64 bits wide. */
#define __BITS_PER_LONG 64
#include <asm-generic/bitsperlong.h>
