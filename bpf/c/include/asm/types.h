/* The BPF target has no asm/ headers of its own, and linux/bpf.h reaches
 * for asm/types.h, asm/bitsperlong.h and asm/posix_types.h. The generic
 * 64-bit versions are right for BPF (a 64-bit target on every host), and
 * these shims keep generation independent of the host's multiarch include
 * path (/usr/include/<triplet>/asm). */
#include <asm-generic/int-ll64.h>
