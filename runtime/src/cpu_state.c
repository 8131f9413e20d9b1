/*===- cpu_state.c - Processor state a CPU kernel needs granted -----------===*
 *
 * A kernel for target x86-64-amx computes on the AMX tile registers, and
 * so does a kernel for target host compiled on a CPU with AMX. Linux (5.16
 * and later) gives a process their state only when asked, with
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); a process that has
 * not asked is killed by SIGILL at its first tile instruction. The runtime
 * asks once per process, before the first such kernel runs, and reports a
 * refusal as a status for x86-64-amx. A host kernel may not use the tiles
 * (it does only where the CPU that compiled it had AMX, which a Linux that
 * refuses the request would not have reported), so for it a refusal is
 * not an error.
 *
 *===----------------------------------------------------------------------===*/
#define _DEFAULT_SOURCE /* syscall */

#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>

enum { kArchRequestPermission = 0x1023, kTileDataFeature = 18 };

static pthread_once_t tile_state_once = PTHREAD_ONCE_INIT;
static int tile_state_error;

static void request_tile_state(void) {
  if (syscall(SYS_arch_prctl, kArchRequestPermission, kTileDataFeature) != 0)
    tile_state_error = errno;
}
#endif

attnrt_status attnrt_impl_grant_cpu_state(const attnrt_context *context,
                                          const attnrt_kernel *kernel) {
  if (!kernel->target)
    return ATTNRT_OK;
  bool host = strcmp(kernel->target, "host") == 0;
  if (!host && strcmp(kernel->target, "x86-64-amx") != 0)
    return ATTNRT_OK;
#if defined(__linux__) && defined(__x86_64__)
  pthread_once(&tile_state_once, request_tile_state);
  if (tile_state_error == 0 || host)
    return ATTNRT_OK;
  attnrt_impl_set_error(context,
                        "kernel %s targets x86-64-amx, and Linux did not "
                        "grant this process the AMX tile state "
                        "(arch_prctl ARCH_REQ_XCOMP_PERM: %s): the CPU or "
                        "the kernel lacks AMX",
                        kernel->name, strerror(tile_state_error));
#else
  if (host)
    return ATTNRT_OK;
  attnrt_impl_set_error(context,
                        "kernel %s targets x86-64-amx, which runs on Linux "
                        "on x86-64 only",
                        kernel->name);
#endif
  return ATTNRT_UNAVAILABLE;
}
