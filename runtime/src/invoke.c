/*===- invoke.c - Argument validation and kernel invocation ---------------===*
 *
 * attnrt_invoke checks, in this order, and reports the first problem only:
 *
 *   1. context and kernel non-null, kernel->abi_version, the descriptor's own
 *      consistency (attnrt_impl_check_descriptor);
 *   2. num_inputs and num_outputs against the descriptor, then the arrays
 *      non-null when their count is not 0;
 *   3. each tensor, inputs then outputs, argument by argument: data non-null,
 *      dtype, rank, shape non-null, every dim >= 1, fixed dims, run-time
 *      dims (the first argument to use a run-time dim binds it; a later
 *      disagreement names both arguments), byte size within int64 and the
 *      address space, strides dense C order (or null), data aligned to
 *      kernel->alignment;
 *   4. no output's bytes overlap an input's or another output's;
 *   5. the kernel's divisibilities under the bound run-time dims.
 *
 * Every dim must be >= 1, so a tensor never has 0 elements and null data is
 * always an error. Dims in messages count from 0.
 *
 *===----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*===-- Message helpers ---------------------------------------------------===*/

/* Room for one argument label, dtype name or shape in a message. */
enum { LABEL_CAPACITY = ATTNRT_LABEL_CAPACITY, SHAPE_CAPACITY = 320 };

typedef struct text {
  char *data;
  size_t capacity;
  size_t length;
} text;

static void append(text *t, const char *format, ...) ATTNRT_PRINTF(2, 3);
static void append(text *t, const char *format, ...) {
  if (t->length >= t->capacity)
    return;
  va_list args;
  va_start(args, format);
  int n = vsnprintf(t->data + t->length, t->capacity - t->length, format, args);
  va_end(args);
  if (n > 0)
    t->length += (size_t)n; /* may pass capacity: later appends stop */
}

const attnrt_arg_info *attnrt_impl_arg_info(const attnrt_kernel *kernel,
                                            size_t argument) {
  size_t num_inputs = (size_t)kernel->num_inputs;
  return argument < num_inputs ? &kernel->inputs[argument]
                               : &kernel->outputs[argument - num_inputs];
}

int attnrt_impl_is_cuda(const attnrt_kernel *kernel) {
  return kernel->target && strncmp(kernel->target, "cuda-", 5) == 0;
}

int attnrt_impl_is_cuda_program(const attnrt_kernel *kernel) {
  return kernel->abi_version >= 4 && kernel->entry &&
         attnrt_impl_is_cuda(kernel);
}

void attnrt_impl_arg_label(char *out, const attnrt_kernel *kernel,
                           size_t argument) {
  size_t num_inputs = (size_t)kernel->num_inputs;
  int is_input = argument < num_inputs;
  size_t index = is_input ? argument : argument - num_inputs;
  const attnrt_arg_info *info = attnrt_impl_arg_info(kernel, argument);
  const char *kind = is_input ? "input" : "output";
  if (info->name && info->name[0])
    snprintf(out, LABEL_CAPACITY, "%s %s", kind, info->name);
  else
    snprintf(out, LABEL_CAPACITY, "%s %zu", kind, index);
}

static void dtype_name(char *out, attnrt_dtype dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "i32", "bool"};
  if ((unsigned)dtype < sizeof names / sizeof names[0])
    snprintf(out, LABEL_CAPACITY, "%s", names[dtype]);
  else
    snprintf(out, LABEL_CAPACITY, "unknown dtype %d", (int)dtype);
}

/* "[2, 5]" */
static void format_shape(char *out, int32_t rank, const int64_t *shape) {
  text t = {out, SHAPE_CAPACITY, 0};
  out[0] = '\0';
  append(&t, "[");
  for (int32_t d = 0; d < rank; ++d)
    append(&t, "%s%" PRId64, d ? ", " : "", shape[d]);
  append(&t, "]");
}

/* The descriptor's shape with run-time dims by name: "[B, T, 64]". */
static void format_expected(char *out, const attnrt_kernel *kernel,
                            const attnrt_arg_info *info) {
  text t = {out, SHAPE_CAPACITY, 0};
  out[0] = '\0';
  append(&t, "[");
  for (int32_t d = 0; d < info->rank; ++d) {
    int64_t dim = info->dims[d];
    if (dim > 0)
      append(&t, "%s%" PRId64, d ? ", " : "", dim);
    else
      append(&t, "%s%s", d ? ", " : "", kernel->dim_names[-(dim + 1)]);
  }
  append(&t, "]");
}

/*===-- Descriptor checks -------------------------------------------------===*/

static attnrt_status check_arg_info(const attnrt_context *context,
                                    const attnrt_kernel *kernel,
                                    size_t argument) {
  char label[LABEL_CAPACITY];
  attnrt_impl_arg_label(label, kernel, argument);
  const attnrt_arg_info *info = attnrt_impl_arg_info(kernel, argument);
  if (attnrt_dtype_size(info->dtype) == 0) {
    attnrt_impl_set_error(context, "kernel %s: %s has unknown dtype %d",
                          kernel->name, label, (int)info->dtype);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (info->rank < 0) {
    attnrt_impl_set_error(context, "kernel %s: %s has rank %" PRId32,
                          kernel->name, label, info->rank);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (info->rank > 0 && !info->dims) {
    attnrt_impl_set_error(context,
                          "kernel %s: %s has rank %" PRId32 " and null dims",
                          kernel->name, label, info->rank);
    return ATTNRT_INVALID_ARGUMENT;
  }
  for (int32_t d = 0; d < info->rank; ++d) {
    int64_t dim = info->dims[d];
    if (dim == 0 || (dim < 0 && -(dim + 1) >= kernel->num_dims)) {
      attnrt_impl_set_error(context,
                            "kernel %s: %s dims[%" PRId32 "] is %" PRId64
                            ", neither a size nor one of its %" PRId32
                            " run-time dims",
                            kernel->name, label, d, dim, kernel->num_dims);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  return ATTNRT_OK;
}

static int uses_dim(const attnrt_arg_info *args, int32_t count,
                    int64_t encoded) {
  for (int32_t a = 0; a < count; ++a)
    for (int32_t d = 0; d < args[a].rank; ++d)
      if (args[a].dims[d] == encoded)
        return 1;
  return 0;
}

/* A fixed size > 0 or a run-time dim of the kernel. */
static int valid_size(const attnrt_kernel *kernel, int64_t encoded) {
  return encoded > 0 || (encoded < 0 && -(encoded + 1) < kernel->num_dims);
}

/* The value of a size under the bound run-time dims. */
static int64_t size_value(int64_t encoded, const int64_t *dims) {
  return encoded > 0 ? encoded : dims[-(encoded + 1)];
}

/* Appends " (NAME = VALUE)" for a run-time size. */
static void describe_size(char **cursor, size_t *room,
                          const attnrt_kernel *kernel, int64_t encoded,
                          const int64_t *dims, int *first) {
  if (encoded > 0)
    return;
  int written = snprintf(*cursor, *room, "%s%s = %" PRId64, *first ? "" : ", ",
                         kernel->dim_names[-(encoded + 1)],
                         size_value(encoded, dims));
  *first = 0;
  if (written < 0 || (size_t)written >= *room)
    written = (int)(*room ? *room - 1 : 0);
  *cursor += written;
  *room -= (size_t)written;
}

static attnrt_status check_divisibilities(attnrt_context *context,
                                          const attnrt_kernel *kernel,
                                          const int64_t *dims) {
  for (int32_t i = 0; i < kernel->num_divisibilities; ++i) {
    const attnrt_divisibility *rule = &kernel->divisibilities[i];
    if (size_value(rule->multiple, dims) % size_value(rule->divisor, dims) ==
        0)
      continue;
    char values[SHAPE_CAPACITY];
    char *cursor = values;
    size_t room = sizeof values;
    int first = 1;
    values[0] = 0;
    describe_size(&cursor, &room, kernel, rule->multiple, dims, &first);
    describe_size(&cursor, &room, kernel, rule->divisor, dims, &first);
    attnrt_impl_set_error(context, "kernel %s: %s (%s)", kernel->name,
                          rule->what, values);
    return ATTNRT_SHAPE_MISMATCH;
  }
  return ATTNRT_OK;
}

attnrt_status attnrt_impl_validate_once(attnrt_context *context,
                                        const attnrt_kernel *kernel) {
  for (size_t i = 0; i < ATTNRT_VALIDATED_CAPACITY; ++i) {
    const attnrt_kernel *known =
        atomic_load_explicit(&context->validated[i], memory_order_acquire);
    if (known == kernel && kernel)
      return ATTNRT_OK;
    if (!known)
      break;
  }
  attnrt_status status = attnrt_impl_check_descriptor(context, kernel);
  if (status != ATTNRT_OK)
    return status;
  /* Remember it in the first free slot (another thread may take it first;
   * then try the next). A full table only means checking again. */
  for (size_t i = 0; i < ATTNRT_VALIDATED_CAPACITY; ++i) {
    const attnrt_kernel *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(
            &context->validated[i], &expected, kernel, memory_order_acq_rel,
            memory_order_acquire) ||
        expected == kernel)
      break;
  }
  return ATTNRT_OK;
}

attnrt_status attnrt_impl_check_descriptor(const attnrt_context *context,
                                           const attnrt_kernel *kernel) {
  if (!kernel) {
    attnrt_impl_set_error(context, "kernel is null");
    return ATTNRT_INVALID_ARGUMENT;
  }
  /* Read nothing past abi_version before it matches: the layout may be
   * another ABI's. */
  if (kernel->abi_version < 2 || kernel->abi_version > ATTNRT_ABI_VERSION) {
    attnrt_impl_set_error(context,
                          "kernel has ABI version %" PRIu32
                          ", this runtime supports 2 to %u; rebuild it with a "
                          "matching attnc",
                          kernel->abi_version, ATTNRT_ABI_VERSION);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (!kernel->name || !kernel->name[0]) {
    attnrt_impl_set_error(context, "kernel descriptor has no name");
    return ATTNRT_INVALID_ARGUMENT;
  }
  const char *name = kernel->name;
  if (kernel->num_dims < 0 || kernel->num_inputs < 0 ||
      kernel->num_outputs < 0) {
    attnrt_impl_set_error(context,
                          "kernel %s: negative count (num_dims %" PRId32
                          ", num_inputs %" PRId32 ", num_outputs %" PRId32 ")",
                          name, kernel->num_dims, kernel->num_inputs,
                          kernel->num_outputs);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if ((kernel->num_dims > 0 && !kernel->dim_names) ||
      (kernel->num_inputs > 0 && !kernel->inputs) ||
      (kernel->num_outputs > 0 && !kernel->outputs)) {
    attnrt_impl_set_error(context,
                          "kernel %s: null dim_names, inputs or "
                          "outputs array",
                          name);
    return ATTNRT_INVALID_ARGUMENT;
  }
  for (int32_t i = 0; i < kernel->num_dims; ++i) {
    if (!kernel->dim_names[i]) {
      attnrt_impl_set_error(
          context, "kernel %s: dim_names[%" PRId32 "] is null", name, i);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  if (kernel->alignment == 0) {
    attnrt_impl_set_error(context, "kernel %s: alignment is 0", name);
    return ATTNRT_INVALID_ARGUMENT;
  }
  int is_cuda = attnrt_impl_is_cuda(kernel);
  if (attnrt_impl_cuda_code(kernel) && !is_cuda) {
    attnrt_impl_set_error(context,
                          "kernel %s: CUDA code in a kernel for target %s",
                          name, kernel->target ? kernel->target : "(none)");
    return ATTNRT_INVALID_ARGUMENT;
  }
  /* A CUDA kernel's code is its PTX; a CPU kernel's its entry. */
  if (!kernel->entry && !is_cuda) {
    attnrt_impl_set_error(context, "kernel %s: entry is null", name);
    return ATTNRT_INVALID_ARGUMENT;
  }
  /* The entry of a CUDA kernel, a host program around its device code,
   * came with ABI version 4: before, the runtime launched every function
   * itself, and an older descriptor's code has no functions to launch. */
  if (kernel->entry && is_cuda && kernel->abi_version < 4) {
    attnrt_impl_set_error(context,
                          "kernel %s targets %s with an entry, which needs ABI "
                          "version 4 (a host program); this descriptor has "
                          "version %" PRIu32,
                          name, kernel->target, kernel->abi_version);
    return ATTNRT_INVALID_ARGUMENT;
  }
  attnrt_status cuda_status = attnrt_impl_check_cuda_code(context, kernel);
  if (cuda_status != ATTNRT_OK)
    return cuda_status;
  attnrt_status state_status = attnrt_impl_grant_cpu_state(context, kernel);
  if (state_status != ATTNRT_OK)
    return state_status;
  size_t num_args = (size_t)kernel->num_inputs + (size_t)kernel->num_outputs;
  for (size_t a = 0; a < num_args; ++a) {
    attnrt_status status = check_arg_info(context, kernel, a);
    if (status != ATTNRT_OK)
      return status;
  }
  /* Every run-time dim must be bound by some argument. */
  for (int32_t i = 0; i < kernel->num_dims; ++i) {
    int64_t encoded = -(int64_t)i - 1;
    if (!uses_dim(kernel->inputs, kernel->num_inputs, encoded) &&
        !uses_dim(kernel->outputs, kernel->num_outputs, encoded)) {
      attnrt_impl_set_error(context,
                            "kernel %s: run-time dim %s is used by "
                            "no argument",
                            name, kernel->dim_names[i]);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  if (kernel->num_divisibilities < 0 ||
      (kernel->num_divisibilities > 0 && !kernel->divisibilities)) {
    attnrt_impl_set_error(context,
                          "kernel %s: bad divisibilities (count %" PRId32 ")",
                          name, kernel->num_divisibilities);
    return ATTNRT_INVALID_ARGUMENT;
  }
  for (int32_t i = 0; i < kernel->num_divisibilities; ++i) {
    const attnrt_divisibility *rule = &kernel->divisibilities[i];
    if (!valid_size(kernel, rule->multiple) ||
        !valid_size(kernel, rule->divisor) || !rule->what) {
      attnrt_impl_set_error(context,
                            "kernel %s: divisibilities[%" PRId32
                            "] names no size or has no text",
                            name, i);
      return ATTNRT_INVALID_ARGUMENT;
    }
  }
  return ATTNRT_OK;
}

/*===-- Tensor checks -----------------------------------------------------===*/

/* Run-time dim bindings: value 0 while unbound. */
typedef struct binding {
  int64_t value;
  size_t argument; /* the argument that bound it */
} binding;

static attnrt_status check_tensor(attnrt_context *context,
                                  const attnrt_kernel *kernel, size_t argument,
                                  const attnrt_tensor *tensor,
                                  binding *bindings, int64_t *out_bytes) {
  const attnrt_arg_info *info = attnrt_impl_arg_info(kernel, argument);
  char label[LABEL_CAPACITY], got[SHAPE_CAPACITY], want[SHAPE_CAPACITY];
  attnrt_impl_arg_label(label, kernel, argument);

  if (!tensor->data) {
    attnrt_impl_set_error(context, "%s: data is null", label);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (tensor->dtype != info->dtype) {
    dtype_name(got, tensor->dtype);
    dtype_name(want, info->dtype);
    attnrt_impl_set_error(context, "%s: dtype is %s, expected %s", label, got,
                          want);
    return ATTNRT_DTYPE_MISMATCH;
  }
  if (tensor->rank != info->rank) {
    format_expected(want, kernel, info);
    attnrt_impl_set_error(
        context, "%s: rank is %" PRId32 ", expected %" PRId32 " (shape %s)",
        label, tensor->rank, info->rank, want);
    return ATTNRT_SHAPE_MISMATCH;
  }
  const int32_t rank = tensor->rank;
  const int64_t *shape = tensor->shape;
  if (rank > 0 && !shape) {
    attnrt_impl_set_error(context, "%s: shape is null (rank %" PRId32 ")",
                          label, rank);
    return ATTNRT_INVALID_ARGUMENT;
  }
  for (int32_t d = 0; d < rank; ++d) {
    if (shape[d] < 1) {
      format_shape(got, rank, shape);
      attnrt_impl_set_error(context,
                            "%s: dim %" PRId32 " is %" PRId64
                            ", expected >= 1 (shape %s)",
                            label, d, shape[d], got);
      return ATTNRT_SHAPE_MISMATCH;
    }
  }
  for (int32_t d = 0; d < rank; ++d) {
    if (info->dims[d] > 0 && shape[d] != info->dims[d]) {
      format_shape(got, rank, shape);
      format_expected(want, kernel, info);
      attnrt_impl_set_error(context,
                            "%s: dim %" PRId32 " is %" PRId64
                            ", expected %" PRId64 " (shape %s, expected %s)",
                            label, d, shape[d], info->dims[d], got, want);
      return ATTNRT_SHAPE_MISMATCH;
    }
  }
  for (int32_t d = 0; d < rank; ++d) {
    if (info->dims[d] > 0)
      continue;
    int64_t index = -(info->dims[d] + 1);
    binding *b = &bindings[index];
    if (b->value == 0) {
      b->value = shape[d];
      b->argument = argument;
    } else if (b->value != shape[d]) {
      char bound_by[LABEL_CAPACITY];
      attnrt_impl_arg_label(bound_by, kernel, b->argument);
      attnrt_impl_set_error(context,
                            "%s: dim %" PRId32 " is %" PRId64
                            ", expected %" PRId64 " (%s, bound to %" PRId64
                            " by %s)",
                            label, d, shape[d], b->value,
                            kernel->dim_names[index], b->value, bound_by);
      return ATTNRT_SHAPE_MISMATCH;
    }
  }

  /* Byte size, overflow-checked: every dim is >= 1 by now. */
  int64_t elements = 1;
  int overflow = 0;
  for (int32_t d = 0; d < rank && !overflow; ++d)
    overflow = __builtin_mul_overflow(elements, shape[d], &elements);
  int64_t bytes = 0;
  overflow = overflow ||
             __builtin_mul_overflow(
                 elements, (int64_t)attnrt_dtype_size(info->dtype), &bytes);
  if (overflow) {
    format_shape(got, rank, shape);
    attnrt_impl_set_error(context,
                          "%s: shape %s is too large: its byte size "
                          "overflows int64",
                          label, got);
    return ATTNRT_SHAPE_MISMATCH;
  }
  uintptr_t start = (uintptr_t)tensor->data, end;
  if ((uint64_t)bytes > (uint64_t)UINTPTR_MAX ||
      __builtin_add_overflow(start, (uintptr_t)bytes, &end)) {
    format_shape(got, rank, shape);
    attnrt_impl_set_error(context,
                          "%s: shape %s (%" PRId64 " bytes) runs "
                          "past the end of the address space",
                          label, got, bytes);
    return ATTNRT_SHAPE_MISMATCH;
  }

  if (tensor->strides) {
    /* The dense strides cannot overflow: their product is elements. */
    int dense = 1;
    int64_t stride = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (tensor->strides[d] != stride)
        dense = 0;
      stride *= shape[d];
    }
    if (!dense) {
      int64_t expected[64];
      format_shape(got, rank, tensor->strides);
      if (rank <= 64) {
        stride = 1;
        for (int32_t d = rank - 1; d >= 0; --d) {
          expected[d] = stride;
          stride *= shape[d];
        }
        format_shape(want, rank, expected);
      } else {
        snprintf(want, sizeof want, "(rank %" PRId32 ")", rank);
      }
      attnrt_impl_set_error(context,
                            "%s: strides %s are not dense C order %s;"
                            " kernels accept dense C order only",
                            label, got, want);
      return ATTNRT_LAYOUT_MISMATCH;
    }
  }

  uintptr_t misalignment = start % kernel->alignment;
  if (misalignment != 0) {
    attnrt_impl_set_error(context,
                          "%s: data is %" PRIuPTR " bytes past a %" PRIu32
                          "-byte boundary; kernel %s needs %" PRIu32
                          "-byte aligned buffers",
                          label, misalignment, kernel->alignment, kernel->name,
                          kernel->alignment);
    return ATTNRT_LAYOUT_MISMATCH;
  }
  *out_bytes = bytes;
  return ATTNRT_OK;
}

/*===-- attnrt_invoke -----------------------------------------------------===*/

/* Bytes of argument bookkeeping attnrt_invoke keeps on its stack: enough for
 * 64 run-time sizes and 64 arguments. */
#define ATTNRT_LOCAL_WORKSPACE 4096

static void release_workspace(const attnrt_context *context, void *workspace,
                              const unsigned char *local) {
  if (workspace != (const void *)local)
    attnrt_impl_release(context, workspace);
}

static int overlaps(const void *a, int64_t a_bytes, const void *b,
                    int64_t b_bytes) {
  uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
  return a0 < b0 + (uintptr_t)b_bytes && b0 < a0 + (uintptr_t)a_bytes;
}

/* attnrt_invoke and attnrt_invoke_on_stream: a CUDA kernel's launches go
 * on `stream`, waited for when `wait`. */
static attnrt_status invoke(attnrt_context *context,
                            const attnrt_kernel *kernel,
                            const attnrt_tensor *inputs, size_t num_inputs,
                            attnrt_tensor *outputs, size_t num_outputs,
                            void *stream, int wait, double *milliseconds) {
  if (!context)
    return ATTNRT_INVALID_ARGUMENT;
  attnrt_status status = attnrt_impl_validate_once(context, kernel);
  if (status != ATTNRT_OK)
    return status;
  const char *name = kernel->name;
  int is_cuda = attnrt_impl_is_cuda(kernel);
  if (stream && !is_cuda) {
    attnrt_impl_set_error(context,
                          "kernel %s runs on the CPU (target %s): its "
                          "stream must be null",
                          name, kernel->target ? kernel->target : "(none)");
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (num_inputs != (size_t)kernel->num_inputs) {
    attnrt_impl_set_error(context,
                          "kernel %s takes %" PRId32 " inputs, got "
                          "%zu",
                          name, kernel->num_inputs, num_inputs);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (num_outputs != (size_t)kernel->num_outputs) {
    attnrt_impl_set_error(context,
                          "kernel %s takes %" PRId32 " outputs, got "
                          "%zu",
                          name, kernel->num_outputs, num_outputs);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (num_inputs > 0 && !inputs) {
    attnrt_impl_set_error(context,
                          "kernel %s: inputs is null (num_inputs "
                          "%zu)",
                          name, num_inputs);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (num_outputs > 0 && !outputs) {
    attnrt_impl_set_error(context,
                          "kernel %s: outputs is null (num_outputs "
                          "%zu)",
                          name, num_outputs);
    return ATTNRT_INVALID_ARGUMENT;
  }

  /* One block for the bindings, the dims handed to the entry, each
   * argument's byte size and the buffer pointers. */
  size_t num_args = num_inputs + num_outputs;
  size_t num_dims = (size_t)kernel->num_dims;
  size_t size = num_dims * (sizeof(binding) + sizeof(int64_t)) +
                num_args * (sizeof(int64_t) + sizeof(void *));
  /* On the stack for any ordinary kernel: repeated invokes allocate
   * nothing. */
  _Alignas(16) unsigned char local[ATTNRT_LOCAL_WORKSPACE];
  void *workspace = size <= sizeof local
                        ? (void *)local
                        : attnrt_impl_allocate(context, size, 16);
  if (!workspace) {
    attnrt_impl_set_error(context,
                          "kernel %s: out of memory validating its "
                          "arguments",
                          name);
    return ATTNRT_OUT_OF_MEMORY;
  }
  binding *bindings = workspace;
  int64_t *dims = (int64_t *)(bindings + num_dims);
  int64_t *bytes = dims + num_dims;
  void **buffers = (void **)(bytes + num_args);
  memset(bindings, 0, num_dims * sizeof *bindings);

  for (size_t a = 0; a < num_args && status == ATTNRT_OK; ++a) {
    const attnrt_tensor *tensor =
        a < num_inputs ? &inputs[a] : &outputs[a - num_inputs];
    status = check_tensor(context, kernel, a, tensor, bindings, &bytes[a]);
    buffers[a] = tensor->data;
  }
  for (size_t o = num_inputs; o < num_args && status == ATTNRT_OK; ++o) {
    for (size_t a = 0; a < o; ++a) {
      if (!overlaps(buffers[o], bytes[o], buffers[a], bytes[a]))
        continue;
      char label[LABEL_CAPACITY], other[LABEL_CAPACITY];
      attnrt_impl_arg_label(label, kernel, o);
      attnrt_impl_arg_label(other, kernel, a);
      attnrt_impl_set_error(context,
                            "%s: its memory overlaps %s (outputs "
                            "must not alias inputs or each other)",
                            label, other);
      status = ATTNRT_INVALID_ARGUMENT;
      break;
    }
  }
  if (status != ATTNRT_OK) {
    release_workspace(context, workspace, local);
    return status;
  }

  for (size_t i = 0; i < num_dims; ++i)
    dims[i] = bindings[i].value;
  status = check_divisibilities(context, kernel, dims);
  if (status != ATTNRT_OK) {
    release_workspace(context, workspace, local);
    return status;
  }
  if (is_cuda) {
    status = attnrt_impl_cuda_launch(context, kernel, inputs, outputs, buffers,
                                     dims, stream, wait, milliseconds);
    release_workspace(context, workspace, local);
    return status;
  }
  attnrt_invocation invocation;
  attnrt_impl_invocation_begin(&invocation, context);
  struct timespec start, end;
  if (milliseconds)
    clock_gettime(CLOCK_MONOTONIC, &start);
  int32_t result = kernel->entry(&invocation, dims, buffers);
  if (milliseconds) {
    clock_gettime(CLOCK_MONOTONIC, &end);
    *milliseconds = 1e3 * (double)(end.tv_sec - start.tv_sec) +
                    1e-6 * (double)(end.tv_nsec - start.tv_nsec);
  }
  attnrt_impl_invocation_end(&invocation);
  release_workspace(context, workspace, local);

  return attnrt_impl_entry_status(context, kernel, result, 0);
}

attnrt_status attnrt_impl_entry_status(const attnrt_context *context,
                                       const attnrt_kernel *kernel,
                                       int32_t result, int reported) {
  if (result == ATTNRT_OK)
    return ATTNRT_OK;
  if (result > ATTNRT_OK && result <= ATTNRT_INTERNAL) {
    if (!reported)
      attnrt_impl_set_error(context, "kernel %s failed: %s", kernel->name,
                            attnrt_status_name((attnrt_status)result));
    return (attnrt_status)result;
  }
  attnrt_impl_set_error(context,
                        "kernel %s failed: status %" PRId32 " (not "
                        "an attnrt_status, reported as ATTNRT_INTERNAL)",
                        kernel->name, result);
  return ATTNRT_INTERNAL;
}

attnrt_status attnrt_invoke(attnrt_context *context,
                            const attnrt_kernel *kernel,
                            const attnrt_tensor *inputs, size_t num_inputs,
                            attnrt_tensor *outputs, size_t num_outputs) {
  return invoke(context, kernel, inputs, num_inputs, outputs, num_outputs, NULL,
                /*wait=*/1, NULL);
}

attnrt_status attnrt_invoke_timed(attnrt_context *context,
                                  const attnrt_kernel *kernel,
                                  const attnrt_tensor *inputs,
                                  size_t num_inputs, attnrt_tensor *outputs,
                                  size_t num_outputs,
                                  double *out_milliseconds) {
  if (context && !out_milliseconds) {
    attnrt_impl_set_error(context,
                          "attnrt_invoke_timed: out_milliseconds is null");
    return ATTNRT_INVALID_ARGUMENT;
  }
  return invoke(context, kernel, inputs, num_inputs, outputs, num_outputs, NULL,
                /*wait=*/1, out_milliseconds);
}

attnrt_status attnrt_invoke_on_stream(attnrt_context *context,
                                      const attnrt_kernel *kernel,
                                      const attnrt_tensor *inputs,
                                      size_t num_inputs, attnrt_tensor *outputs,
                                      size_t num_outputs, void *stream) {
  return invoke(context, kernel, inputs, num_inputs, outputs, num_outputs,
                stream, /*wait=*/0, NULL);
}
