/*===- cuda_launch.c - CUDA kernels, launched through the driver ----------===*
 *
 * A CUDA kernel's descriptor carries its PTX and, per fused attention op,
 * its functions and how to launch them (attnrt_cuda_code). A context created
 * for a CUDA device sets the device up on its first CUDA invoke: the
 * driver's primary context of the device, its compute capability. Each
 * kernel's module is loaded once per context (the driver compiles the PTX
 * for the GPU then) and its functions kept; an invoke after that finds them
 * under the context's lock, reads the sizes off the tensors' shapes, picks
 * the key splits, and queues the launches on the caller's stream. It
 * allocates nothing but the splits' workspace, in stream order.
 *
 * A kernel with a host program (ABI version 4: an entry beside its device
 * code, for graphs with ops around their attention) runs its entry instead,
 * on the calling thread with the device current: the entry launches the
 * other ops' functions (attnrt_cuda_launch) and the attention ops
 * (attnrt_cuda_run_attention, the same launcher as above, on the tensors the
 * entry names), and takes its intermediates from the context's memory pool
 * (attnrt_allocate), all on the invocation's stream; the intermediates are
 * freed in stream order once the entry returns.
 *
 *===----------------------------------------------------------------------===*/
#include "cuda_driver.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Functions per attention op: attention, merge, tensor_core. */
enum { FUNCTIONS_PER_ATTENTION = 3 };

/* The most launch parameters of one function. */
enum { MAX_PARAMS = 64 };

typedef struct loaded_module {
  const attnrt_kernel *kernel;
  void *module; /* CUmodule */
  /* CUfunction: FUNCTIONS_PER_ATTENTION per op, then the host program's
   * (attnrt_cuda_code::functions). */
  void **functions;
} loaded_module;

struct attnrt_cuda_state {
  const attnrt_cuda_api *api;
  int device;    /* CUdevice */
  void *primary; /* CUcontext: the device's primary context, retained */
  int compute;   /* compute capability, 10 * major + minor */
  /* CUmemoryPool of the key splits' workspaces, keeping what it got (no
   * release threshold): after the first invokes, allocating one takes no
   * memory from the driver. */
  void *pool;
  loaded_module *modules;
  size_t num_modules, module_capacity;
};

const attnrt_cuda_code *attnrt_impl_cuda_code(const attnrt_kernel *kernel) {
  return kernel->abi_version >= 3 ? kernel->cuda : NULL;
}

/* The number of functions a host program launches: descriptors before ABI
 * version 4 end their code before the field. */
static int32_t num_program_functions(const attnrt_kernel *kernel,
                                     const attnrt_cuda_code *code) {
  return kernel->abi_version >= 4 ? code->num_functions : 0;
}

/* The names of the sizes B .. Dv, for messages. */
static const char *const size_names[ATTNRT_CUDA_SPLITS] = {
    "B", "Hq", "Hkv", "S", "T", "Dk", "Dv"};

/*===-- Descriptor checks -------------------------------------------------===*/

/* An attention op's function; its tensor parameters must be < num_tensors
 * (the kernel's arguments, or MAX_PARAMS for a host program's op, whose
 * tensors attnrt_cuda_run_attention counts). */
static attnrt_status check_function(const attnrt_context *context,
                                    const attnrt_kernel *kernel,
                                    const attnrt_cuda_function *function,
                                    int32_t op, const char *role, int required,
                                    int32_t num_tensors) {
  const char *name = kernel->name;
  if (!function->name) {
    if (!required)
      return ATTNRT_OK;
    attnrt_impl_set_error(context,
                          "kernel %s: attention %" PRId32 " has no %s function",
                          name, op, role);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (function->num_params < 0 || function->num_params > MAX_PARAMS ||
      (function->num_params > 0 && !function->params) ||
      function->block_threads < 1 || function->block_threads > 1024 ||
      function->block_rows < 1 ||
      (function->row_flags &
       ~(ATTNRT_CUDA_ROWS_SPLIT | ATTNRT_CUDA_ROWS_GROUPED |
         ATTNRT_CUDA_BLOCKS_SPLIT)) ||
      ((function->row_flags & ATTNRT_CUDA_ROWS_SPLIT) &&
       (function->row_flags & ATTNRT_CUDA_BLOCKS_SPLIT))) {
    attnrt_impl_set_error(context,
                          "kernel %s: function %s has a bad launch "
                          "(%" PRId32 " params, block of %" PRId32
                          " threads, %" PRId32 " rows, row flags %" PRId32 ")",
                          name, function->name, function->num_params,
                          function->block_threads, function->block_rows,
                          function->row_flags);
    return ATTNRT_INVALID_ARGUMENT;
  }
  for (int32_t p = 0; p < function->num_params; ++p) {
    int32_t code = function->params[p];
    if (code >= num_tensors || code < ATTNRT_CUDA_SIZE(ATTNRT_CUDA_SPLITS)) {
      attnrt_impl_set_error(context,
                            "kernel %s: function %s: parameter %" PRId32
                            " is %" PRId32 ", which names nothing",
                            name, function->name, p, code);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  return ATTNRT_OK;
}

attnrt_status attnrt_impl_check_cuda_code(const attnrt_context *context,
                                          const attnrt_kernel *kernel) {
  const attnrt_cuda_code *code = attnrt_impl_cuda_code(kernel);
  const char *name = kernel->name;
  if (!code) /* A CUDA target without code fails when invoked. */
    return ATTNRT_OK;
  /* A host program may run no attention op (a graph of other ops); the
   * runtime alone has nothing to launch without one. */
  int program = attnrt_impl_is_cuda_program(kernel);
  if (!code->ptx || code->num_attentions < (program ? 0 : 1) ||
      (code->num_attentions > 0 && !code->attentions)) {
    attnrt_impl_set_error(context,
                          "kernel %s: its CUDA code has no PTX or no "
                          "attention ops",
                          name);
    return ATTNRT_INVALID_ARGUMENT;
  }
  /* A host program's ops number their own tensors, which
   * attnrt_cuda_run_attention counts (and checks each axis of) when called. */
  int32_t num_tensors =
      program ? MAX_PARAMS : kernel->num_inputs + kernel->num_outputs;
  for (int32_t op = 0; op < code->num_attentions; ++op) {
    const attnrt_cuda_attention *attention = &code->attentions[op];
    attnrt_status status =
        check_function(context, kernel, &attention->attention, op, "attention",
                       1, num_tensors);
    if (status == ATTNRT_OK)
      status = check_function(context, kernel, &attention->merge, op, "merge",
                              1, num_tensors);
    if (status == ATTNRT_OK)
      status = check_function(context, kernel, &attention->tensor_core, op,
                              "tensor_core", 0, num_tensors);
    if (status != ATTNRT_OK)
      return status;
    for (int32_t s = 0; s < ATTNRT_CUDA_SPLITS; ++s) {
      int32_t argument = attention->size_sources[s][0];
      int32_t axis = attention->size_sources[s][1];
      const attnrt_arg_info *info =
          !program && argument >= 0 && argument < num_tensors
              ? attnrt_impl_arg_info(kernel, (size_t)argument)
              : NULL;
      int read = program ? argument >= 0 && argument < num_tensors && axis >= 0
                         : info && axis >= 0 && axis < info->rank;
      if (!read) {
        attnrt_impl_set_error(context,
                              "kernel %s: attention %" PRId32 ": size %" PRId32
                              " is read from no tensor axis",
                              name, op, s);
        return ATTNRT_INVALID_ARGUMENT;
      }
    }
    if (attention->split_target_warps < 1 || attention->split_min_keys < 1 ||
        attention->workspace_row_bytes[0] < 0 ||
        attention->workspace_row_bytes[1] < 0) {
      attnrt_impl_set_error(context,
                            "kernel %s: attention %" PRId32
                            ": bad key-split rule or workspace",
                            name, op);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  /* The host program's own functions: parameters it passes as words. */
  int32_t num_functions = num_program_functions(kernel, code);
  if (num_functions < 0 || (num_functions > 0 && !code->functions)) {
    attnrt_impl_set_error(
        context, "kernel %s: its CUDA code has %" PRId32 " functions%s", name,
        num_functions, num_functions > 0 ? " and a null array" : "");
    return ATTNRT_INVALID_ARGUMENT;
  }
  for (int32_t f = 0; f < num_functions; ++f) {
    const attnrt_cuda_function *function = &code->functions[f];
    if (!function->name) {
      attnrt_impl_set_error(
          context, "kernel %s: function %" PRId32 " has no name", name, f);
      return ATTNRT_INVALID_ARGUMENT;
    }
    if (function->num_params < 0 || function->num_params > MAX_PARAMS ||
        function->block_threads < 1 || function->block_threads > 1024) {
      attnrt_impl_set_error(
          context,
          "kernel %s: function %s has a bad launch "
          "(%" PRId32 " params, block of %" PRId32 " threads)",
          name, function->name, function->num_params, function->block_threads);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  return ATTNRT_OK;
}

/*===-- Device and modules ------------------------------------------------===*/

/* Sets the context's error: the formatted text, ": " and what the driver
 * says of `result`. */
static void driver_error(const attnrt_context *context, cuda_result result,
                         const char *format, ...) ATTNRT_PRINTF(3, 4);
static void driver_error(const attnrt_context *context, cuda_result result,
                         const char *format, ...) {
  char text[ATTNRT_MESSAGE_CAPACITY], problem[256];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  attnrt_impl_cuda_describe(result, problem, sizeof problem);
  attnrt_impl_set_error(context, "%s: %s", text, problem);
}

/* The compute capability a target needs ("cuda-sm90a": 90, exact 1), or 0
 * for a target this runtime cannot read. */
static int target_compute(const char *target, int *exact) {
  int compute = 0;
  const char *digit = target + strlen("cuda-sm");
  if (strncmp(target, "cuda-sm", strlen("cuda-sm")) != 0)
    return 0;
  while (*digit >= '0' && *digit <= '9' && compute < 1000)
    compute = 10 * compute + (*digit++ - '0');
  *exact = *digit == 'a';
  return compute;
}

/* What an error is about: a kernel, or the call `what` names. Spelled out
 * (subject_text) only when there is an error, not on every invoke. */
typedef struct subject {
  const attnrt_kernel *kernel;
  const char *what;
} subject;

/* "kernel K targets cuda-sm90" (with_target) or "kernel K", or `what`. */
static const char *subject_text(char *out, size_t capacity, subject about,
                                int with_target) {
  if (!about.kernel)
    return about.what;
  if (with_target)
    snprintf(out, capacity, "kernel %s targets %s", about.kernel->name,
             about.kernel->target);
  else
    snprintf(out, capacity, "kernel %s", about.kernel->name);
  return out;
}

/* A memory pool on `device` that keeps what it allocated, made in its
 * primary context `primary`. */
static cuda_result create_pool(const attnrt_cuda_api *api, void *primary,
                               int device, void **pool) {
  cuda_pool_props props;
  memset(&props, 0, sizeof props);
  props.allocation_type = CUDA_MEM_ALLOCATION_PINNED;
  props.location_type = CUDA_MEM_LOCATION_DEVICE;
  props.location_id = device;
  cuda_result result = api->context_push(primary);
  if (result != 0)
    return result;
  result = api->pool_create(pool, &props);
  uint64_t keep = UINT64_MAX;
  if (result == 0 && (result = api->pool_set_attribute(
                          *pool, CUDA_MEMPOOL_RELEASE_THRESHOLD, &keep)) != 0) {
    api->pool_destroy(*pool);
    *pool = NULL;
  }
  void *previous = NULL;
  api->context_pop(&previous);
  return result;
}

/* The context's device, set up on first use; null with the error set,
 * which begins with `about` ("kernel K targets cuda-sm90"). */
static struct attnrt_cuda_state *
setup_device(attnrt_context *context, subject about, attnrt_status *status) {
  char problem[512], text[256];
  const char *what = NULL;
  const attnrt_cuda_api *api;
  *status = attnrt_impl_cuda_api(&api, problem, sizeof problem);
  if (*status != ATTNRT_OK) {
    what = subject_text(text, sizeof text, about, 1);
    attnrt_impl_set_error(context, "%s: %s", what, problem);
    return NULL;
  }
  if (context->device_kind != ATTNRT_DEVICE_CUDA) {
    what = subject_text(text, sizeof text, about, 1);
    attnrt_impl_set_error(context,
                          "%s: this context runs kernels "
                          "on the CPU; create it with "
                          "attnrt_context_create_on_device(options, "
                          "ATTNRT_DEVICE_CUDA, ordinal, &context)",
                          what);
    *status = ATTNRT_INVALID_ARGUMENT;
    return NULL;
  }
  pthread_mutex_lock(&context->cuda_lock);
  struct attnrt_cuda_state *state = context->cuda;
  if (!state) {
    int device = 0, major = 0, minor = 0;
    int32_t count = 0;
    void *primary = NULL, *pool = NULL;
    what = subject_text(text, sizeof text, about, 1);
    cuda_result result = api->device_get(&device, context->device_ordinal);
    if (result != 0) {
      attnrt_device_count(ATTNRT_DEVICE_CUDA, &count, NULL, 0);
      driver_error(context, result,
                   "%s: no CUDA device %" PRId32 " (the driver counts %" PRId32
                   ")",
                   what, context->device_ordinal, count);
      *status = ATTNRT_UNAVAILABLE;
    } else if ((result = api->device_get_attribute(
                    &major, CUDA_DEVICE_COMPUTE_MAJOR, device)) != 0 ||
               (result = api->device_get_attribute(
                    &minor, CUDA_DEVICE_COMPUTE_MINOR, device)) != 0 ||
               (result = api->primary_context_retain(&primary, device)) != 0 ||
               (result = create_pool(api, primary, device, &pool)) != 0) {
      if (primary)
        api->primary_context_release(device);
      driver_error(context, result,
                   "%s: CUDA device %" PRId32 " cannot be set up", what,
                   context->device_ordinal);
      *status = ATTNRT_UNAVAILABLE;
    } else {
      state = attnrt_impl_allocate(context, sizeof *state,
                                   ATTNRT_CONTEXT_ALIGNMENT);
      if (!state) {
        api->pool_destroy(pool);
        api->primary_context_release(device);
        attnrt_impl_set_error(context, "%s: out of memory", what);
        *status = ATTNRT_OUT_OF_MEMORY;
      } else {
        memset(state, 0, sizeof *state);
        state->api = api;
        state->device = device;
        state->primary = primary;
        state->compute = 10 * major + minor;
        state->pool = pool;
        context->cuda = state;
      }
    }
  }
  pthread_mutex_unlock(&context->cuda_lock);
  return state;
}

/* setup_device for `kernel`, whose target the device must run. */
static struct attnrt_cuda_state *device_state(attnrt_context *context,
                                              const attnrt_kernel *kernel,
                                              attnrt_status *status) {
  const char *name = kernel->name;
  struct attnrt_cuda_state *state =
      setup_device(context, (subject){kernel, NULL}, status);
  if (!state)
    return NULL;
  int exact = 0;
  int needed = target_compute(kernel->target, &exact);
  if (needed == 0 || state->compute < needed ||
      (exact && state->compute != needed)) {
    /* attnc's CUDA targets: cuda-sm80, cuda-sm90, cuda-sm90a. */
    const char *instead = state->compute >= 90   ? "--target cuda-sm90"
                          : state->compute >= 80 ? "--target cuda-sm80"
                                                 : "none of attnc's CUDA "
                                                   "targets (sm_80 and newer)";
    attnrt_impl_set_error(
        context,
        "kernel %s targets %s; CUDA device %" PRId32 " is sm_%d, which runs %s",
        name, kernel->target, context->device_ordinal, state->compute, instead);
    *status = ATTNRT_UNAVAILABLE;
    return NULL;
  }
  return state;
}

/* The functions of `kernel`'s module, loading it on first use (the
 * device's primary context current); null with the error set. */
static void **kernel_functions(attnrt_context *context,
                               struct attnrt_cuda_state *state,
                               const attnrt_kernel *kernel,
                               attnrt_status *status) {
  const attnrt_cuda_api *api = state->api;
  const attnrt_cuda_code *code = attnrt_impl_cuda_code(kernel);
  void **functions = NULL;
  pthread_mutex_lock(&context->cuda_lock);
  for (size_t m = 0; m < state->num_modules && !functions; ++m)
    if (state->modules[m].kernel == kernel)
      functions = state->modules[m].functions;
  if (functions) {
    pthread_mutex_unlock(&context->cuda_lock);
    return functions;
  }

  char problem[256];
  if (state->num_modules == state->module_capacity) {
    size_t capacity = state->module_capacity ? 2 * state->module_capacity : 4;
    loaded_module *modules = attnrt_impl_allocate(
        context, capacity * sizeof *modules, ATTNRT_CONTEXT_ALIGNMENT);
    if (!modules) {
      pthread_mutex_unlock(&context->cuda_lock);
      attnrt_impl_set_error(context, "kernel %s: out of memory", kernel->name);
      *status = ATTNRT_OUT_OF_MEMORY;
      return NULL;
    }
    if (state->num_modules)
      memcpy(modules, state->modules, state->num_modules * sizeof *modules);
    attnrt_impl_release(context, state->modules);
    state->modules = modules;
    state->module_capacity = capacity;
  }
  size_t num_attention_functions =
      (size_t)code->num_attentions * FUNCTIONS_PER_ATTENTION;
  int32_t num_functions = num_program_functions(kernel, code);
  size_t count = num_attention_functions + (size_t)num_functions;
  /* At least one slot: a null array means "not loaded". */
  functions =
      attnrt_impl_allocate(context, (count ? count : 1) * sizeof *functions,
                           ATTNRT_CONTEXT_ALIGNMENT);
  if (!functions) {
    pthread_mutex_unlock(&context->cuda_lock);
    attnrt_impl_set_error(context, "kernel %s: out of memory", kernel->name);
    *status = ATTNRT_OUT_OF_MEMORY;
    return NULL;
  }
  memset(functions, 0, (count ? count : 1) * sizeof *functions);

  /* The JIT's own words on a PTX it refuses. */
  char log[1024] = "";
  int options[] = {CUDA_JIT_ERROR_LOG_BUFFER,
                   CUDA_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  void *module = NULL;
  cuda_result result = api->module_load(&module, code->ptx, 2, options, values);
  if (result != 0) {
    pthread_mutex_unlock(&context->cuda_lock);
    attnrt_impl_release(context, functions);
    attnrt_impl_cuda_describe(result, problem, sizeof problem);
    log[sizeof log - 1] = '\0';
    attnrt_impl_set_error(context,
                          "kernel %s: the CUDA driver cannot load its PTX for "
                          "sm_%d: %s%s%s",
                          kernel->name, state->compute, problem,
                          log[0] ? ": " : "", log);
    *status = ATTNRT_UNAVAILABLE;
    return NULL;
  }
  for (int32_t op = 0; op < code->num_attentions; ++op) {
    const attnrt_cuda_function *roles[FUNCTIONS_PER_ATTENTION] = {
        &code->attentions[op].attention, &code->attentions[op].merge,
        &code->attentions[op].tensor_core};
    for (int r = 0; r < FUNCTIONS_PER_ATTENTION && result == 0; ++r) {
      if (!roles[r]->name)
        continue;
      result = api->module_function(
          &functions[op * FUNCTIONS_PER_ATTENTION + r], module, roles[r]->name);
      if (result != 0)
        driver_error(context, result, "kernel %s: its PTX has no function %s",
                     kernel->name, roles[r]->name);
    }
  }
  for (int32_t f = 0; f < num_functions && result == 0; ++f) {
    const char *function = code->functions[f].name;
    result = api->module_function(&functions[num_attention_functions + f],
                                  module, function);
    if (result != 0)
      driver_error(context, result, "kernel %s: its PTX has no function %s",
                   kernel->name, function);
  }
  if (result != 0) {
    api->module_unload(module);
    pthread_mutex_unlock(&context->cuda_lock);
    attnrt_impl_release(context, functions);
    *status = ATTNRT_INVALID_ARGUMENT;
    return NULL;
  }
  state->modules[state->num_modules++] =
      (loaded_module){kernel, module, functions};
  pthread_mutex_unlock(&context->cuda_lock);
  return functions;
}

void attnrt_impl_cuda_release(attnrt_context *context) {
  struct attnrt_cuda_state *state = context->cuda;
  if (!state)
    return;
  const attnrt_cuda_api *api = state->api;
  void *previous = NULL;
  if (api->context_push(state->primary) == 0) {
    for (size_t m = 0; m < state->num_modules; ++m)
      api->module_unload(state->modules[m].module);
    /* Its memory goes back once work in flight has freed it. */
    api->pool_destroy(state->pool);
    api->context_pop(&previous);
  }
  for (size_t m = 0; m < state->num_modules; ++m)
    attnrt_impl_release(context, state->modules[m].functions);
  attnrt_impl_release(context, state->modules);
  api->primary_context_release(state->device);
  attnrt_impl_release(context, state);
  context->cuda = NULL;
}

/* Makes the context's device current on this thread, until pop_device. */
static attnrt_status make_current(attnrt_context *context,
                                  const struct attnrt_cuda_state *state,
                                  subject about) {
  cuda_result result = state->api->context_push(state->primary);
  if (result == 0)
    return ATTNRT_OK;
  char text[256];
  driver_error(
      context, result, "%s: cannot make CUDA device %" PRId32 " current",
      subject_text(text, sizeof text, about, 0), context->device_ordinal);
  return ATTNRT_UNAVAILABLE;
}

static void pop_device(const struct attnrt_cuda_state *state) {
  void *previous = NULL;
  state->api->context_pop(&previous);
}

/*===-- Launches ----------------------------------------------------------===*/

/* The tensors an attention op's parameters and size sources number: the
 * kernel's inputs then its outputs, or the tensors a host program hands
 * attnrt_cuda_run_attention (`first` alone). Two arrays read as one, so that
 * the kernel's arguments need no copy however many there are. */
typedef struct tensor_list {
  const attnrt_tensor *first;
  int32_t num_first;
  const attnrt_tensor *second;
} tensor_list;

static const attnrt_tensor *tensor_at(const tensor_list *tensors,
                                      int32_t index) {
  return index < tensors->num_first
             ? &tensors->first[index]
             : &tensors->second[index - tensors->num_first];
}

/* Every tensor is memory of the context's device: a host pointer would
 * fault inside the kernel, where nothing can say which argument it was. */
static attnrt_status check_pointers(attnrt_context *context,
                                    const struct attnrt_cuda_state *state,
                                    const attnrt_kernel *kernel,
                                    void *const *buffers) {
  int32_t num_args = kernel->num_inputs + kernel->num_outputs;
  for (int32_t a = 0; a < num_args; ++a) {
    int ordinal = -1;
    cuda_result result =
        state->api->pointer_attribute(&ordinal, CUDA_POINTER_DEVICE_ORDINAL,
                                      (cuda_pointer)(uintptr_t)buffers[a]);
    if (result == 0 && ordinal == context->device_ordinal)
      continue;
    char label[ATTNRT_LABEL_CAPACITY];
    attnrt_impl_arg_label(label, kernel, (size_t)a);
    if (result != 0)
      driver_error(context, result,
                   "%s: data %p is not memory of the CUDA driver; kernel %s "
                   "takes device pointers of CUDA device %" PRId32
                   " (cuMemAlloc)",
                   label, buffers[a], kernel->name, context->device_ordinal);
    else
      attnrt_impl_set_error(context,
                            "%s: data is memory of CUDA device %d; this "
                            "context runs on device %" PRId32,
                            label, ordinal, context->device_ordinal);
    return ATTNRT_INVALID_ARGUMENT;
  }
  return ATTNRT_OK;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Launches `function` for one attention op with `sizes` (B .. splits). */
static attnrt_status launch(attnrt_context *context,
                            const struct attnrt_cuda_state *state,
                            const attnrt_kernel *kernel,
                            const attnrt_cuda_function *function, void *handle,
                            const int64_t *sizes, const tensor_list *tensors,
                            cuda_pointer workspace, void *stream) {
  uint64_t values[MAX_PARAMS];
  void *params[MAX_PARAMS];
  for (int32_t p = 0; p < function->num_params; ++p) {
    int32_t code = function->params[p];
    values[p] = code >= 0 ? (uint64_t)(uintptr_t)tensor_at(tensors, code)->data
                : code == ATTNRT_CUDA_WORKSPACE
                    ? workspace
                    : (uint64_t)sizes[ATTNRT_CUDA_SIZE(0) - code];
    params[p] = &values[p];
  }
  /* The sizes' product is at most q's elements times splits (Hq / Hkv <=
   * Hq), far inside int64. */
  int32_t flags = function->row_flags;
  int64_t heads = sizes[ATTNRT_CUDA_HQ], rows = sizes[ATTNRT_CUDA_S];
  if (flags & ATTNRT_CUDA_ROWS_GROUPED) {
    rows *= heads / sizes[ATTNRT_CUDA_HKV];
    heads = sizes[ATTNRT_CUDA_HKV];
  }
  if (flags & ATTNRT_CUDA_ROWS_SPLIT)
    rows *= sizes[ATTNRT_CUDA_SPLITS];
  int64_t grid[3] = {ceil_div(rows, function->block_rows), heads,
                     sizes[ATTNRT_CUDA_B]};
  if (flags & ATTNRT_CUDA_BLOCKS_SPLIT)
    grid[0] *= sizes[ATTNRT_CUDA_SPLITS];
  /* CUDA's grid limits: 2^31 - 1 blocks along x, 65535 along y and z. */
  static const char *const axes[3] = {"query rows", "heads", "batch B"};
  const int64_t limits[3] = {INT32_MAX, 65535, 65535};
  for (int d = 0; d < 3; ++d) {
    if (grid[d] > limits[d]) {
      attnrt_impl_set_error(context,
                            "kernel %s: %s: %" PRId64 " blocks along grid "
                            "axis %d exceed CUDA's %" PRId64,
                            kernel->name, axes[d], grid[d], d, limits[d]);
      return ATTNRT_SHAPE_MISMATCH;
    }
  }
  cuda_result result = state->api->launch(
      handle, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
      (unsigned)function->block_threads, 1, 1, 0, stream, params, NULL);
  if (result != 0) {
    driver_error(context, result, "kernel %s: launching %s failed",
                 kernel->name, function->name);
    return ATTNRT_INTERNAL;
  }
  return ATTNRT_OK;
}

/* One attention op: its sizes, splits, workspace and launches, its
 * parameters and size sources numbering `tensors`, which hold every one
 * they name (the kernel's arguments, checked against the descriptor, or a
 * host program's, checked by check_op_tensors). */
static attnrt_status run_attention(attnrt_context *context,
                                   const struct attnrt_cuda_state *state,
                                   const attnrt_kernel *kernel,
                                   const attnrt_cuda_attention *attention,
                                   void **functions, const tensor_list *tensors,
                                   void *stream) {
  const attnrt_cuda_api *api = state->api;
  int64_t sizes[ATTNRT_CUDA_NUM_SIZES];
  for (int s = 0; s < ATTNRT_CUDA_SPLITS; ++s) {
    const attnrt_tensor *tensor =
        tensor_at(tensors, attention->size_sources[s][0]);
    sizes[s] = tensor->shape[attention->size_sources[s][1]];
  }
  /* B·Hq·S ≤ q's elements, which fit in int64 (checked with its bytes). */
  int64_t rows =
      sizes[ATTNRT_CUDA_B] * sizes[ATTNRT_CUDA_HQ] * sizes[ATTNRT_CUDA_S];
  int64_t splits = 1;
  if (rows < attention->split_target_warps) {
    splits = ceil_div(attention->split_target_warps, rows);
    int64_t most = ceil_div(sizes[ATTNRT_CUDA_T], attention->split_min_keys);
    if (splits > most)
      splits = most;
    if (splits < 1)
      splits = 1;
  }
  sizes[ATTNRT_CUDA_SPLITS] = splits;

  /* The tensor-core function where there is one and it takes these splits
   * (one, or any with ATTNRT_CUDA_BLOCKS_SPLIT), else the SIMT one. */
  int tensor_core = attention->tensor_core.name != NULL &&
                    (splits == 1 || (attention->tensor_core.row_flags &
                                     ATTNRT_CUDA_BLOCKS_SPLIT));
  const attnrt_cuda_function *first =
      tensor_core ? &attention->tensor_core : &attention->attention;
  void *first_handle = functions[tensor_core ? 2 : 0];
  if (splits == 1)
    return launch(context, state, kernel, first, first_handle, sizes, tensors,
                  0, stream);
  int64_t row_bytes = 0, bytes = 0;
  if (__builtin_mul_overflow(attention->workspace_row_bytes[0],
                             sizes[ATTNRT_CUDA_DV], &row_bytes) ||
      __builtin_add_overflow(row_bytes, attention->workspace_row_bytes[1],
                             &row_bytes) ||
      __builtin_mul_overflow(rows, splits, &bytes) ||
      __builtin_mul_overflow(bytes, row_bytes, &bytes)) {
    attnrt_impl_set_error(context,
                          "kernel %s: the key splits' workspace overflows "
                          "int64 at these sizes",
                          kernel->name);
    return ATTNRT_OUT_OF_MEMORY;
  }
  cuda_pointer workspace = 0;
  cuda_result result =
      api->allocate_from_pool(&workspace, (size_t)bytes, state->pool, stream);
  if (result != 0) {
    driver_error(context, result,
                 "kernel %s: cannot allocate %" PRId64
                 " bytes of workspace for %" PRId64
                 " key splits on CUDA device %" PRId32,
                 kernel->name, bytes, splits, context->device_ordinal);
    return ATTNRT_OUT_OF_MEMORY;
  }
  attnrt_status status = launch(context, state, kernel, first, first_handle,
                                sizes, tensors, workspace, stream);
  if (status == ATTNRT_OK)
    status = launch(context, state, kernel, &attention->merge, functions[1],
                    sizes, tensors, workspace, stream);
  api->free_async(workspace, stream);
  return status;
}

/*===-- Host programs -----------------------------------------------------===*/

/* Device allocations of one entry recorded in the invocation itself;
 * beyond, the record grows from the context's allocator. */
enum { LOCAL_ALLOCATIONS = 16 };

/* What the entry of a host program works with: lives on the invoking
 * thread's stack for one call of the entry, which calls the services below
 * from that thread only (the device is current there). */
struct attnrt_cuda_invocation {
  const struct attnrt_cuda_state *state;
  const attnrt_kernel *kernel;
  const attnrt_cuda_code *code;
  void **functions; /* the loaded module's (loaded_module::functions) */
  void *stream;
  /* Set once a service call failed and said why in the context's error:
   * the entry's status then goes back as it is, with that message. */
  int reported;
  cuda_pointer *allocations; /* `local`, or from the context's allocator */
  size_t num_allocations, allocation_capacity;
  cuda_pointer local[LOCAL_ALLOCATIONS];
};

/* The host program `invocation` runs; null when there is none (a null
 * invocation, or one of a CPU kernel's entry: then with the error set). */
static struct attnrt_cuda_invocation *program_of(attnrt_invocation *invocation,
                                                 const char *what) {
  if (invocation && invocation->cuda)
    return invocation->cuda;
  if (invocation && invocation->context)
    attnrt_impl_set_error(invocation->context,
                          "%s: the invocation is not of a CUDA kernel's "
                          "entry (its kernel runs on the CPU)",
                          what);
  return NULL;
}

/* Returns `status`, noting that a service failed and set the context's
 * error. */
static attnrt_status reported(struct attnrt_cuda_invocation *cuda,
                              attnrt_status status) {
  cuda->reported = 1;
  return status;
}

void *attnrt_impl_cuda_allocate(attnrt_invocation *invocation, int64_t bytes) {
  struct attnrt_cuda_invocation *cuda = invocation->cuda;
  attnrt_context *context = invocation->context;
  const char *name = cuda->kernel->name;
  if (bytes < 0) {
    attnrt_impl_set_error(context,
                          "kernel %s: attnrt_allocate of %" PRId64 " bytes",
                          name, bytes);
    reported(cuda, ATTNRT_INVALID_ARGUMENT);
    return NULL;
  }
  /* Room in the record first: memory it could not hold would never be
   * freed. */
  if (cuda->num_allocations == cuda->allocation_capacity) {
    size_t capacity = 2 * cuda->allocation_capacity;
    cuda_pointer *grown =
        attnrt_impl_allocate(context, capacity * sizeof *grown, 16);
    if (!grown) {
      attnrt_impl_set_error(context,
                            "kernel %s: out of memory recording its %zu "
                            "device allocations",
                            name, cuda->num_allocations + 1);
      reported(cuda, ATTNRT_OUT_OF_MEMORY);
      return NULL;
    }
    memcpy(grown, cuda->allocations,
           cuda->num_allocations * sizeof *cuda->allocations);
    if (cuda->allocations != cuda->local)
      attnrt_impl_release(context, cuda->allocations);
    cuda->allocations = grown;
    cuda->allocation_capacity = capacity;
  }
  /* From the context's pool, which keeps what it got: after the first
   * invokes at a size, no memory from the driver. Zero bytes get a block
   * too, as on the CPU (the driver refuses a size of 0). */
  cuda_pointer pointer = 0;
  cuda_result result = cuda->state->api->allocate_from_pool(
      &pointer, bytes ? (size_t)bytes : 1, cuda->state->pool, cuda->stream);
  if (result != 0) {
    driver_error(context, result,
                 "kernel %s: cannot allocate %" PRId64
                 " bytes for an intermediate on CUDA device %" PRId32,
                 name, bytes, context->device_ordinal);
    reported(cuda, ATTNRT_OUT_OF_MEMORY);
    return NULL;
  }
  cuda->allocations[cuda->num_allocations++] = pointer;
  return (void *)(uintptr_t)pointer;
}

int32_t attnrt_cuda_launch(attnrt_invocation *invocation, int32_t function,
                           int64_t threads, const int64_t *words,
                           int32_t num_words) {
  struct attnrt_cuda_invocation *cuda =
      program_of(invocation, "attnrt_cuda_launch");
  if (!cuda)
    return ATTNRT_INVALID_ARGUMENT;
  attnrt_context *context = invocation->context;
  const attnrt_kernel *kernel = cuda->kernel;
  const attnrt_cuda_code *code = cuda->code;
  int32_t num_functions = num_program_functions(kernel, code);
  if (function < 0 || function >= num_functions) {
    attnrt_impl_set_error(context,
                          "kernel %s: attnrt_cuda_launch of function %" PRId32
                          "; the kernel has %" PRId32,
                          kernel->name, function, num_functions);
    return reported(cuda, ATTNRT_INVALID_ARGUMENT);
  }
  const attnrt_cuda_function *called = &code->functions[function];
  if (num_words != called->num_params || (num_words > 0 && !words)) {
    attnrt_impl_set_error(context,
                          "kernel %s: attnrt_cuda_launch of %s with %" PRId32
                          " words%s; it takes %" PRId32,
                          kernel->name, called->name, num_words,
                          words ? "" : " (null)", called->num_params);
    return reported(cuda, ATTNRT_INVALID_ARGUMENT);
  }
  if (threads < 0) {
    attnrt_impl_set_error(
        context, "kernel %s: attnrt_cuda_launch of %s for %" PRId64 " threads",
        kernel->name, called->name, threads);
    return reported(cuda, ATTNRT_INVALID_ARGUMENT);
  }
  if (threads == 0) /* no work; CUDA refuses an empty grid */
    return ATTNRT_OK;
  /* The functions loop over their work by the grid's stride: CUDA's most
   * blocks along x still do all of it. */
  int64_t blocks = (threads - 1) / called->block_threads + 1;
  if (blocks > INT32_MAX)
    blocks = INT32_MAX;
  /* The driver wants a pointer to each parameter, and non-const ones. */
  uint64_t values[MAX_PARAMS];
  void *params[MAX_PARAMS];
  for (int32_t p = 0; p < num_words; ++p) {
    values[p] = (uint64_t)words[p];
    params[p] = &values[p];
  }
  void *handle =
      cuda->functions[(size_t)code->num_attentions * FUNCTIONS_PER_ATTENTION +
                      (size_t)function];
  cuda_result result = cuda->state->api->launch(
      handle, (unsigned)blocks, 1, 1, (unsigned)called->block_threads, 1, 1, 0,
      cuda->stream, params, NULL);
  if (result != 0) {
    driver_error(context, result, "kernel %s: launching %s failed",
                 kernel->name, called->name);
    return reported(cuda, ATTNRT_INTERNAL);
  }
  return ATTNRT_OK;
}

/* The tensors a host program hands attention op `op`: each one a parameter
 * or a size names is there, with data or with that axis; the sizes are >=
 * 1 and Hq a multiple of Hkv. (The kernel's arguments have all this from
 * the descriptor and attnrt_invoke's checks.) */
static attnrt_status check_op_tensors(const attnrt_context *context,
                                      const attnrt_kernel *kernel, int32_t op,
                                      const attnrt_cuda_attention *attention,
                                      const attnrt_tensor *tensors,
                                      int32_t num_tensors) {
  const char *name = kernel->name;
  const attnrt_cuda_function *roles[FUNCTIONS_PER_ATTENTION] = {
      &attention->attention, &attention->merge, &attention->tensor_core};
  for (int r = 0; r < FUNCTIONS_PER_ATTENTION; ++r) {
    for (int32_t p = 0; roles[r]->name && p < roles[r]->num_params; ++p) {
      int32_t index = roles[r]->params[p];
      if (index < 0)
        continue;
      if (index >= num_tensors) {
        attnrt_impl_set_error(context,
                              "kernel %s: attention %" PRId32
                              ": parameter %" PRId32 " of %s is tensor %" PRId32
                              ", but %" PRId32 " tensors were given",
                              name, op, p, roles[r]->name, index, num_tensors);
        return ATTNRT_INVALID_ARGUMENT;
      }
      if (!tensors[index].data) {
        attnrt_impl_set_error(context,
                              "kernel %s: attention %" PRId32
                              ": tensor %" PRId32 " has null data",
                              name, op, index);
        return ATTNRT_INVALID_ARGUMENT;
      }
    }
  }
  int64_t sizes[ATTNRT_CUDA_SPLITS];
  for (int32_t s = 0; s < ATTNRT_CUDA_SPLITS; ++s) {
    int32_t index = attention->size_sources[s][0];
    int32_t axis = attention->size_sources[s][1];
    if (index >= num_tensors) {
      attnrt_impl_set_error(context,
                            "kernel %s: attention %" PRId32 ": size %s is "
                            "read from tensor %" PRId32 ", but %" PRId32
                            " tensors were given",
                            name, op, size_names[s], index, num_tensors);
      return ATTNRT_INVALID_ARGUMENT;
    }
    const attnrt_tensor *tensor = &tensors[index];
    if (axis >= tensor->rank || !tensor->shape) {
      attnrt_impl_set_error(context,
                            "kernel %s: attention %" PRId32 ": size %s is "
                            "read from axis %" PRId32 " of tensor %" PRId32
                            ", which has rank %" PRId32 "%s",
                            name, op, size_names[s], axis, index, tensor->rank,
                            tensor->shape ? "" : " and a null shape");
      return ATTNRT_INVALID_ARGUMENT;
    }
    sizes[s] = tensor->shape[axis];
    if (sizes[s] < 1) {
      attnrt_impl_set_error(context,
                            "kernel %s: attention %" PRId32 ": size %s (axis "
                            "%" PRId32 " of tensor %" PRId32 ") is %" PRId64
                            ", expected >= 1",
                            name, op, size_names[s], axis, index, sizes[s]);
      return ATTNRT_SHAPE_MISMATCH;
    }
  }
  int64_t rows = 0;
  if (sizes[ATTNRT_CUDA_HQ] % sizes[ATTNRT_CUDA_HKV] != 0 ||
      __builtin_mul_overflow(sizes[ATTNRT_CUDA_B], sizes[ATTNRT_CUDA_HQ],
                             &rows) ||
      __builtin_mul_overflow(rows, sizes[ATTNRT_CUDA_S], &rows)) {
    attnrt_impl_set_error(context,
                          "kernel %s: attention %" PRId32 ": sizes B = %" PRId64
                          ", Hq = %" PRId64 ", Hkv = %" PRId64 ", S = %" PRId64
                          ": Hq must be a multiple of Hkv and B * Hq * S fit "
                          "in int64",
                          name, op, sizes[ATTNRT_CUDA_B], sizes[ATTNRT_CUDA_HQ],
                          sizes[ATTNRT_CUDA_HKV], sizes[ATTNRT_CUDA_S]);
    return ATTNRT_SHAPE_MISMATCH;
  }
  return ATTNRT_OK;
}

int32_t attnrt_cuda_run_attention(attnrt_invocation *invocation, int32_t op,
                                  const attnrt_tensor *tensors,
                                  int32_t num_tensors) {
  struct attnrt_cuda_invocation *cuda =
      program_of(invocation, "attnrt_cuda_run_attention");
  if (!cuda)
    return ATTNRT_INVALID_ARGUMENT;
  attnrt_context *context = invocation->context;
  const attnrt_kernel *kernel = cuda->kernel;
  const attnrt_cuda_code *code = cuda->code;
  if (op < 0 || op >= code->num_attentions) {
    attnrt_impl_set_error(context,
                          "kernel %s: attnrt_cuda_run_attention of op %" PRId32
                          "; the kernel has %" PRId32 " attention ops",
                          kernel->name, op, code->num_attentions);
    return reported(cuda, ATTNRT_INVALID_ARGUMENT);
  }
  if (num_tensors < 0 || (num_tensors > 0 && !tensors)) {
    attnrt_impl_set_error(
        context, "kernel %s: attention %" PRId32 ": %" PRId32 " tensors%s",
        kernel->name, op, num_tensors, tensors ? "" : " and a null array");
    return reported(cuda, ATTNRT_INVALID_ARGUMENT);
  }
  const attnrt_cuda_attention *attention = &code->attentions[op];
  attnrt_status status =
      check_op_tensors(context, kernel, op, attention, tensors, num_tensors);
  tensor_list list = {tensors, num_tensors, NULL};
  if (status == ATTNRT_OK)
    status = run_attention(context, cuda->state, kernel, attention,
                           cuda->functions + op * FUNCTIONS_PER_ATTENTION,
                           &list, cuda->stream);
  return status == ATTNRT_OK ? ATTNRT_OK : reported(cuda, status);
}

/* Runs the entry of a host program on `stream`, the device current; frees
 * its allocations once it returns. */
static attnrt_status run_program(attnrt_context *context,
                                 const struct attnrt_cuda_state *state,
                                 const attnrt_kernel *kernel, void **functions,
                                 const int64_t *dims, void *const *buffers,
                                 void *stream) {
  struct attnrt_cuda_invocation cuda;
  cuda.state = state;
  cuda.kernel = kernel;
  cuda.code = attnrt_impl_cuda_code(kernel);
  cuda.functions = functions;
  cuda.stream = stream;
  cuda.reported = 0;
  cuda.allocations = cuda.local;
  cuda.num_allocations = 0;
  cuda.allocation_capacity = LOCAL_ALLOCATIONS;
  attnrt_invocation invocation;
  attnrt_impl_invocation_begin(&invocation, context);
  invocation.cuda = &cuda;
  int32_t result = kernel->entry(&invocation, dims, buffers);
  /* In stream order, after the launches that use them: no wait, and the
   * pool hands the memory to the next invoke on this stream at once. */
  cuda_result freed = 0;
  for (size_t a = cuda.num_allocations; a-- > 0;) {
    cuda_result r = state->api->free_async(cuda.allocations[a], stream);
    if (freed == 0)
      freed = r;
  }
  if (cuda.allocations != cuda.local)
    attnrt_impl_release(context, cuda.allocations);
  attnrt_impl_invocation_end(&invocation);

  const char *name = kernel->name;
  if (result == ATTNRT_OK) {
    if (freed == 0)
      return ATTNRT_OK;
    driver_error(context, freed, "kernel %s: freeing its intermediates failed",
                 name);
    return ATTNRT_INTERNAL;
  }
  /* A service that failed said why; else the entry's own check did. */
  return attnrt_impl_entry_status(context, kernel, result, cuda.reported);
}

attnrt_status attnrt_impl_cuda_launch(attnrt_context *context,
                                      const attnrt_kernel *kernel,
                                      const attnrt_tensor *inputs,
                                      const attnrt_tensor *outputs,
                                      void *const *buffers, const int64_t *dims,
                                      void *stream, int wait,
                                      double *milliseconds) {
  const attnrt_cuda_code *code = attnrt_impl_cuda_code(kernel);
  attnrt_status status = ATTNRT_OK;
  struct attnrt_cuda_state *state = device_state(context, kernel, &status);
  if (!state)
    return status;
  if (!code) {
    attnrt_impl_set_error(context,
                          "kernel %s targets %s but carries no device code "
                          "(a descriptor of ABI version %" PRIu32
                          "); compile it again with this attnc",
                          kernel->name, kernel->target, kernel->abi_version);
    return ATTNRT_UNAVAILABLE;
  }
  const attnrt_cuda_api *api = state->api;
  status = make_current(context, state, (subject){kernel, NULL});
  if (status != ATTNRT_OK)
    return status;
  cuda_result result = 0;
  void **functions = kernel_functions(context, state, kernel, &status);
  if (functions)
    status = check_pointers(context, state, kernel, buffers);
  /* Timed: events either side of the launches. */
  void *events[2] = {NULL, NULL};
  if (status == ATTNRT_OK && milliseconds &&
      ((result = api->event_create(&events[0], 0)) != 0 ||
       (result = api->event_create(&events[1], 0)) != 0 ||
       (result = api->event_record(events[0], stream)) != 0)) {
    driver_error(context, result, "kernel %s: cannot time it", kernel->name);
    status = ATTNRT_INTERNAL;
  }
  tensor_list arguments = {inputs, kernel->num_inputs, outputs};
  if (functions && status == ATTNRT_OK && attnrt_impl_is_cuda_program(kernel))
    status =
        run_program(context, state, kernel, functions, dims, buffers, stream);
  else
    for (int32_t op = 0;
         functions && status == ATTNRT_OK && op < code->num_attentions; ++op)
      status = run_attention(context, state, kernel, &code->attentions[op],
                             functions + op * FUNCTIONS_PER_ATTENTION,
                             &arguments, stream);
  if (status == ATTNRT_OK && milliseconds) {
    float elapsed = 0;
    if ((result = api->event_record(events[1], stream)) != 0 ||
        (result = api->event_synchronize(events[1])) != 0 ||
        (result = api->event_elapsed(&elapsed, events[0], events[1])) != 0) {
      driver_error(context, result, "kernel %s failed on CUDA device %" PRId32,
                   kernel->name, context->device_ordinal);
      status = ATTNRT_INTERNAL;
    }
    *milliseconds = elapsed;
  }
  for (int e = 0; e < 2; ++e)
    if (events[e])
      api->event_destroy(events[e]);
  if (status == ATTNRT_OK && wait &&
      (result = api->stream_synchronize(stream)) != 0) {
    driver_error(context, result, "kernel %s failed on CUDA device %" PRId32,
                 kernel->name, context->device_ordinal);
    status = ATTNRT_INTERNAL;
  }
  pop_device(state);
  return status;
}

/*===-- Device memory -----------------------------------------------------===*/

/* The device of `context`, set up and current on this thread (until
 * pop_device); null with the error set. */
static struct attnrt_cuda_state *
push_device(attnrt_context *context, const char *what, attnrt_status *status) {
  subject about = {NULL, what};
  struct attnrt_cuda_state *state = setup_device(context, about, status);
  if (state && (*status = make_current(context, state, about)) != ATTNRT_OK)
    return NULL;
  return state;
}

attnrt_status attnrt_device_allocate(attnrt_context *context, size_t bytes,
                                     void **out_data) {
  if (!context)
    return ATTNRT_INVALID_ARGUMENT;
  if (!out_data) {
    attnrt_impl_set_error(context, "attnrt_device_allocate: out_data is null");
    return ATTNRT_INVALID_ARGUMENT;
  }
  *out_data = NULL;
  char what[96];
  snprintf(what, sizeof what, "attnrt_device_allocate of %zu bytes", bytes);
  attnrt_status status;
  struct attnrt_cuda_state *state = push_device(context, what, &status);
  if (!state)
    return status;
  cuda_pointer pointer = 0;
  cuda_result result = state->api->allocate(&pointer, bytes ? bytes : 1);
  pop_device(state);
  if (result != 0) {
    driver_error(context, result, "%s on CUDA device %" PRId32, what,
                 context->device_ordinal);
    return result == 2 /* CUDA_ERROR_OUT_OF_MEMORY */ ? ATTNRT_OUT_OF_MEMORY
                                                      : ATTNRT_INTERNAL;
  }
  *out_data = (void *)(uintptr_t)pointer;
  return ATTNRT_OK;
}

void attnrt_device_release(attnrt_context *context, void *data) {
  attnrt_status status;
  if (!context || !data)
    return;
  struct attnrt_cuda_state *state =
      push_device(context, "attnrt_device_release", &status);
  if (!state)
    return;
  state->api->free((cuda_pointer)(uintptr_t)data);
  pop_device(state);
}

/* attnrt_device_upload (`upload`) and attnrt_device_download. */
static attnrt_status copy(attnrt_context *context, void *destination,
                          const void *source, size_t bytes, int upload) {
  if (!context)
    return ATTNRT_INVALID_ARGUMENT;
  const char *what = upload ? "attnrt_device_upload" : "attnrt_device_download";
  if ((!destination || !source) && bytes > 0) {
    attnrt_impl_set_error(context, "%s: a null pointer", what);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (bytes == 0)
    return ATTNRT_OK;
  attnrt_status status;
  struct attnrt_cuda_state *state = push_device(context, what, &status);
  if (!state)
    return status;
  cuda_result result =
      upload ? state->api->upload((cuda_pointer)(uintptr_t)destination, source,
                                  bytes)
             : state->api->download(destination,
                                    (cuda_pointer)(uintptr_t)source, bytes);
  pop_device(state);
  if (result != 0) {
    driver_error(context, result, "%s of %zu bytes", what, bytes);
    return ATTNRT_INVALID_ARGUMENT;
  }
  return ATTNRT_OK;
}

attnrt_status attnrt_device_upload(attnrt_context *context, void *device_data,
                                   const void *host_data, size_t bytes) {
  return copy(context, device_data, host_data, bytes, 1);
}

attnrt_status attnrt_device_download(attnrt_context *context, void *host_data,
                                     const void *device_data, size_t bytes) {
  return copy(context, host_data, device_data, bytes, 0);
}
