/*===- cuda_probe.c - What libattnrt says about CUDA on this machine ------===*
 *
 * Prints what attnrt_device_count reports for the CPU and for CUDA, then
 * invokes a descriptor whose target is cuda-sm90 (whose entry must never
 * run). ctest runs it against no driver, stand-in drivers and, where the
 * toolkit has it, CUDA's stub library, and matches the lines; it exits 1 only
 * when something is wrong whatever the driver (a CPU count other than 1, a
 * status other than OK or UNAVAILABLE, the entry called).
 *
 *===----------------------------------------------------------------------===*/

#include <attnc/attnrt.h>

#include <stdio.h>

static int entry_called;

static int32_t never_run(attnrt_invocation *invocation, const int64_t *dims,
                         void *const *buffers) {
  (void)invocation;
  (void)dims;
  (void)buffers;
  entry_called = 1;
  return 0;
}

int main(void) {
  int failed = 0;
  int32_t count = -1;
  char message[512];
  attnrt_status status =
      attnrt_device_count(ATTNRT_DEVICE_CPU, &count, message, sizeof message);
  if (status != ATTNRT_OK || count != 1) {
    printf("cpu: %s %d %s\n", attnrt_status_name(status), (int)count, message);
    failed = 1;
  }
  status =
      attnrt_device_count(ATTNRT_DEVICE_CUDA, &count, message, sizeof message);
  printf("cuda devices: %s %d %s\n", attnrt_status_name(status), (int)count,
         message);
  failed |= status != ATTNRT_OK && status != ATTNRT_UNAVAILABLE;

  static const int64_t one[] = {1};
  static const attnrt_arg_info input = {"x", ATTNRT_F32, 1, one};
  static const attnrt_arg_info output = {"y", ATTNRT_F32, 1, one};
  /* A CUDA target without device code (ABI version 3's cuda field null):
   * what a user meets first is still the missing driver. */
  static const attnrt_kernel kernel = {
      ATTNRT_ABI_VERSION, "probe", 0,         NULL, 1,    &input, 1, &output, 4,
      "cuda-sm90",        "{}",    never_run, 0,    NULL, NULL};
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  options.threads = 1;
  attnrt_context *context = NULL;
  if (attnrt_context_create(&options, &context) != ATTNRT_OK) {
    printf("context: cannot create\n");
    return 1;
  }
  float x = 1, y = 0;
  attnrt_tensor in = {&x, ATTNRT_F32, 1, one, NULL};
  attnrt_tensor out = {&y, ATTNRT_F32, 1, one, NULL};
  status = attnrt_invoke(context, &kernel, &in, 1, &out, 1);
  printf("invoke: %s %s\n", attnrt_status_name(status),
         attnrt_context_last_error(context));
  failed |= status == ATTNRT_OK || entry_called;
  attnrt_context_release(context);
  if (failed)
    printf("probe: FAILED\n"); /* ctest matches output, not exit codes */
  return failed;
}
