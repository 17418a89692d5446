/* See asm/types.h. */
#include <asm-generic/posix_types.h>
