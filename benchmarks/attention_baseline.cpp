// attention_baseline: the CPU baselines attnc's generated attention kernels are
// measured against. Not a test: ctest never runs it. See docs/benchmarks.md.
//
// Multi-head attention forward in f32, B = 1, H heads, S = T = L, head dim D,
// optionally causal; Q, K, V, O dense [H][L][D]; O = softmax(Q·Kᵀ/√D [+mask])·V.
//
// Methods (one function each, listed in kMethods below):
//   unfused  per head: cblas_sgemm Q·Kᵀ into an L×L buffer (1/√D as alpha), the
//            causal mask over the full product, row softmax (max, exp, sum,
//            normalise; vectorised loops), cblas_sgemm P·V. This is what an
//            unfused framework does.
//   naive    scalar loops, one query row at a time (skipped beyond
//            --naive-max-len; causal rows stop at the diagonal).
//   attnc    the kernel attnc compiles from benchmarks/graphs/attention_d{64,128}
//            [_causal].json at build time (attnc_add_kernel; H and L are
//            run-time dims), called through attnrt_invoke on an attnrt
//            context with --threads threads. Other D: skipped.
//   sgemm-only  calibration, not attention: unfused's two sgemms alone. On a
//            shared host it shows how fast the machine was during the run.
//
// Usage:
//   attention_baseline --heads 8 --len 2048 --dim 64 [--causal] --threads 1
//                      --repeat 5 [--json] [--method all|unfused|unfused-vexp|naive|attnc|attnc-halide[-AUTOSCHEDULER]|sgemm-only]
//
// With --method all (the default) the program first checks every method
// against a float64 reference at a small size, then runs each method in its
// own child process (this executable again, with --method NAME), so the peak
// resident memory each row reports (VmHWM of /proc/self/status) is that
// method's alone. --method NAME times one method in this process.
//
// Rate: every row counts 4·L²·D flops per head (the two products), causal
// included, so causal and non-causal rates compare as times do.
//
// Output: a text table, or with --json one JSON object per line (JSON Lines):
// {"kind":"check",...} then {"kind":"result",...} per method.

#include "softmax_rows.h"

#ifdef ATTNC_BENCH_HAVE_ATTNC
// Written by attnc compile (benchmarks/CMakeLists.txt, attnc_add_kernel).
#include "bench_attention_d128.h"
#include "bench_attention_d128_causal.h"
#include "bench_attention_d64.h"
#include "bench_attention_d64_causal.h"
#endif
#ifdef ATTNC_BENCH_HAVE_HALIDE
#include "bench_halide_attention_d128.h"
#include "bench_halide_attention_d128_causal.h"
#include "bench_halide_attention_d64.h"
#include "bench_halide_attention_d64_causal.h"
#endif
#ifdef ATTNC_BENCH_HAVE_HALIDE_AUTO
#include "bench_halide_adams2019_attention_d128.h"
#include "bench_halide_adams2019_attention_d64.h"
#include "bench_halide_adams2019_attention_d64_causal.h"
#include "bench_halide_li2018_attention_d128.h"
#include "bench_halide_li2018_attention_d64.h"
#include "bench_halide_li2018_attention_d64_causal.h"
#include "bench_halide_mullapudi2016_attention_d128.h"
#include "bench_halide_mullapudi2016_attention_d64.h"
#include "bench_halide_mullapudi2016_attention_d64_causal.h"
#endif

#include <cblas.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

extern char **environ;

namespace {

using attnc_bench::SoftmaxRows;

//===-- Options -------------------------------------------------------------===//

struct Options {
  int64_t heads = 8;
  int64_t len = 1024;
  int64_t dim = 64;
  bool causal = false;
  int threads = 1;
  int repeat = 5;
  bool json = false;
  std::string method = "all";
  bool no_check = false;    // --method NAME: skip the small-size check
  bool no_header = false;   // used by the parent for its children
  int64_t naive_max_len = 1024;
  double max_seconds = 60;  // time budget per method for the timed runs
  int64_t check_heads = 2;
  int64_t check_len = 203;  // odd on purpose: no method may assume multiples
  uint64_t seed = 1;
};

[[noreturn]] void usage(const char *argv0, int status) {
  std::fprintf(status ? stderr : stdout,
R"(usage: %s [options]
Multi-head attention forward, f32, B=1, S=T=L: CPU baselines for attnc.

  --heads H            heads (default 8)
  --len L              sequence length, S = T = L (default 1024)
  --dim D              head dim (default 64)
  --causal             causal mask (rates still count 4*L^2*D flops per head)
  --threads N          OpenBLAS threads (openblas_set_num_threads; default 1) and
                       attnc's (attnrt context); the softmax and naive are
                       single-threaded
  --repeat R           timed runs after one warm-up; the median is reported (default 5)
  --method M           all (default: check, then each method in its own process),
                       or one of: unfused unfused-vexp naive attnc sgemm-only (a
                       calibration: unfused's two products without the softmax)
  --json               one JSON object per line
  --naive-max-len N    skip naive beyond L = N (default 1024)
  --max-seconds S      fewer timed runs when R would take longer than S (default 60)
  --no-check           skip the small-size agreement check
  --check-len N        L of the check (default 203), --check-heads N (default 2)
  --seed N             input data seed (default 1)
)",
               argv0);
  std::exit(status);
}

int64_t parse_int(const char *flag, const char *text, int64_t lo, int64_t hi) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    std::fprintf(stderr, "%s: expected an integer in [%lld, %lld], got '%s'\n",
                 flag, (long long)lo, (long long)hi, text);
    std::exit(2);
  }
  return v;
}

Options parse_options(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: missing value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--heads") o.heads = parse_int("--heads", value(), 1, 4096);
    else if (a == "--len") o.len = parse_int("--len", value(), 1, 1 << 20);
    else if (a == "--dim") o.dim = parse_int("--dim", value(), 1, 4096);
    else if (a == "--causal") o.causal = true;
    else if (a == "--threads") o.threads = (int)parse_int("--threads", value(), 1, 1024);
    else if (a == "--repeat") o.repeat = (int)parse_int("--repeat", value(), 1, 100000);
    else if (a == "--json") o.json = true;
    else if (a == "--method") o.method = value();
    else if (a == "--no-check") o.no_check = true;
    else if (a == "--no-header") o.no_header = true;
    else if (a == "--naive-max-len") o.naive_max_len = parse_int(a.c_str(), value(), 0, 1 << 20);
    else if (a == "--max-seconds") o.max_seconds = (double)parse_int(a.c_str(), value(), 1, 1 << 20);
    else if (a == "--check-len") o.check_len = parse_int(a.c_str(), value(), 1, 4096);
    else if (a == "--check-heads") o.check_heads = parse_int(a.c_str(), value(), 1, 64);
    else if (a == "--seed") o.seed = (uint64_t)parse_int(a.c_str(), value(), 0, INT64_MAX);
    else if (a == "--help" || a == "-h") usage(argv[0], 0);
    else {
      std::fprintf(stderr, "unknown option '%s' (try --help)\n", a.c_str());
      std::exit(2);
    }
  }
  const int64_t elems = o.heads * o.len * o.len;
  if (elems > (int64_t(1) << 40)) {
    std::fprintf(stderr, "problem too large\n");
    std::exit(2);
  }
  return o;
}

//===-- Problem and data ------------------------------------------------------===//

struct Problem {
  int64_t heads, len, dim;
  bool causal;
  int threads;
  float scale; // 1/sqrt(D)
  int64_t head_elems() const { return len * dim; }
  int64_t elems() const { return heads * len * dim; }
  // 4·L²·D per head: Q·Kᵀ and P·V, 2·L²·D each. Also for causal.
  double flops() const { return 4.0 * double(len) * double(len) * double(dim) * double(heads); }
};

Problem make_problem(const Options &o, int64_t heads, int64_t len) {
  return Problem{heads, len, o.dim, o.causal, o.threads, 1.0f / std::sqrt(float(o.dim))};
}

struct FreeDeleter {
  void operator()(float *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

// 64-byte aligned, zero-filled (so every page is resident from the start).
Buffer alloc_floats(int64_t n) {
  size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  float *p = static_cast<float *>(std::aligned_alloc(64, bytes));
  if (!p) {
    std::fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    std::exit(3);
  }
  std::memset(p, 0, bytes);
  return Buffer(p);
}

// Q, K, V inputs and the O output, each [H][L][D] dense.
struct Tensors {
  Buffer q, k, v, o;
};

Tensors make_tensors(const Problem &p, uint64_t seed) {
  Tensors t{alloc_floats(p.elems()), alloc_floats(p.elems()), alloc_floats(p.elems()),
            alloc_floats(p.elems())};
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  auto next = [&s]() { // xorshift64*, uniform in [-1, 1)
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    return float(double((s * 0x2545F4914F6CDD1Dull) >> 40) / double(1 << 23) - 1.0);
  };
  for (float *x : {t.q.get(), t.k.get(), t.v.get()})
    for (int64_t i = 0; i < p.elems(); ++i) x[i] = next();
  return t;
}

//===-- Methods ---------------------------------------------------------------===//
//
// A method prepares what it needs for one problem (workspace, a compiled
// kernel, a runtime context) and returns the function that computes
// t.o from t.q, t.k, t.v; only that function is timed. When the method cannot
// run this problem it returns an empty function and says why in *skip.
// Adding a method is one prepare function plus one row in kMethods.

using Runner = std::function<void()>;
using PrepareFn = Runner (*)(const Problem &p, Tensors &t, const Options &o, std::string *skip);

// (a) Unfused OpenBLAS: per head S = (Q·Kᵀ)/√D (one sgemm, the scale as
// alpha) into one L×L buffer reused by every head, the causal mask and row
// softmax over the full product, O = P·V (one sgemm). --threads is OpenBLAS's;
// the softmax runs on this thread: split over std::threads beside OpenBLAS's
// pthread pool (whose workers spin after each call) it was slower on 2 vCPUs,
// 4x at L=300, no gain at L=2048.
Runner prepare_unfused_with(SoftmaxRows softmax_rows, const Problem &p, Tensors &t) {
  auto s = std::make_shared<Buffer>(alloc_floats(p.len * p.len));
  return [p, &t, s, softmax_rows]() {
    const int64_t L = p.len, D = p.dim;
    float *S = s->get();
    for (int64_t h = 0; h < p.heads; ++h) {
      const float *q = t.q.get() + h * L * D, *k = t.k.get() + h * L * D,
                  *v = t.v.get() + h * L * D;
      float *o = t.o.get() + h * L * D;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)L, (int)L, (int)D, p.scale, q,
                  (int)D, k, (int)D, 0.0f, S, (int)L);
      softmax_rows(S, L, L, 0, L, p.causal);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)L, (int)D, (int)L, 1.0f, S,
                  (int)L, v, (int)D, 0.0f, o, (int)D);
    }
  };
}

// `unfused`: the softmax with one expf call per score (-O3), the baseline the
// issue's targets are stated against. `unfused-vexp`: the same with the
// softmax vectorised (-ffast-math, libmvec), a stronger baseline.
Runner prepare_unfused(const Problem &p, Tensors &t, const Options &, std::string *) {
  return prepare_unfused_with(attnc_bench::softmax_rows_scalar_exp, p, t);
}
Runner prepare_unfused_vexp(const Problem &p, Tensors &t, const Options &, std::string *) {
  return prepare_unfused_with(attnc_bench::softmax_rows_vector_exp, p, t);
}

// Calibration, not attention: the two products of `unfused` alone (Q·Kᵀ into
// the L×L buffer, then that buffer times V, no softmax). On a shared host its
// rate says how fast the machine was during the run; unfused's time minus
// this one is what its softmax and mask cost.
Runner prepare_sgemm_only(const Problem &p, Tensors &t, const Options &, std::string *) {
  auto s = std::make_shared<Buffer>(alloc_floats(p.len * p.len));
  return [p, &t, s]() {
    const int64_t L = p.len, D = p.dim;
    float *S = s->get();
    for (int64_t h = 0; h < p.heads; ++h) {
      const float *q = t.q.get() + h * L * D, *k = t.k.get() + h * L * D,
                  *v = t.v.get() + h * L * D;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)L, (int)L, (int)D, p.scale, q,
                  (int)D, k, (int)D, 0.0f, S, (int)L);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)L, (int)D, (int)L, 1.0f, S,
                  (int)L, v, (int)D, 0.0f, t.o.get() + h * L * D, (int)D);
    }
  };
}

// (b) Naive scalar loops, one query row at a time: scores, max, exp, sum, then
// the weighted sum of V rows. Causal rows stop at the diagonal. The compiler
// is told not to vectorise it.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
void naive_attention(const Problem &p, const float *Q, const float *K, const float *V, float *O,
                     float *row) {
  const int64_t L = p.len, D = p.dim;
  for (int64_t h = 0; h < p.heads; ++h) {
    const float *q = Q + h * L * D, *k = K + h * L * D, *v = V + h * L * D;
    float *o = O + h * L * D;
    for (int64_t i = 0; i < L; ++i) {
      const int64_t n = p.causal ? i + 1 : L;
      float max = -std::numeric_limits<float>::infinity();
#if defined(__clang__)
#pragma clang loop vectorize(disable)
#endif
      for (int64_t j = 0; j < n; ++j) {
        float dot = 0.0f;
#if defined(__clang__)
#pragma clang loop vectorize(disable)
#endif
        for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
        row[j] = dot * p.scale;
        max = std::max(max, row[j]);
      }
      float sum = 0.0f;
#if defined(__clang__)
#pragma clang loop vectorize(disable)
#endif
      for (int64_t j = 0; j < n; ++j) {
        row[j] = std::exp(row[j] - max);
        sum += row[j];
      }
      float *oi = o + i * D;
#if defined(__clang__)
#pragma clang loop vectorize(disable)
#endif
      for (int64_t d = 0; d < D; ++d) oi[d] = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        const float w = row[j] / sum;
#if defined(__clang__)
#pragma clang loop vectorize(disable)
#endif
        for (int64_t d = 0; d < D; ++d) oi[d] += w * v[j * D + d];
      }
    }
  }
}

Runner prepare_naive(const Problem &p, Tensors &t, const Options &o, std::string *skip) {
  if (p.len > o.naive_max_len) {
    *skip = "L > " + std::to_string(o.naive_max_len) + ", see --naive-max-len";
    return {};
  }
  auto row = std::make_shared<Buffer>(alloc_floats(p.len));
  return [p, &t, row]() {
    naive_attention(p, t.q.get(), t.k.get(), t.v.get(), t.o.get(), row->get());
  };
}

// (c) attnc: the kernels attnc_add_kernel compiles at build time from
// benchmarks/graphs/attention_d{64,128}[_causal].json (B = 1; H and L are
// run-time dims, so one kernel per D and mask serves every size), called
// through attnrt_invoke on a context with p.threads threads. The context is
// created here, outside the timed function; the timed function builds the
// four tensor views (negligible) and invokes. One set of kernels per backend.
struct KernelSet {
  const attnrt_kernel *d64, *d64_causal, *d128, *d128_causal;
  const attnrt_kernel *find(int64_t dim, bool causal) const {
    if (dim == 64) return causal ? d64_causal : d64;
    if (dim == 128) return causal ? d128_causal : d128;
    return nullptr;
  }
};

Runner prepare_kernel(const KernelSet &set, const Problem &p, Tensors &t, std::string *skip) {
  const attnrt_kernel *kernel = set.find(p.dim, p.causal);
  if (!kernel) {
    *skip = "no attnc kernel for D=" + std::to_string(p.dim) + " (benchmarks/graphs: D=64, 128)";
    return {};
  }
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  options.threads = size_t(p.threads);
  attnrt_context *raw = nullptr;
  if (attnrt_status status = attnrt_context_create(&options, &raw)) {
    *skip = std::string("attnrt_context_create: ") + attnrt_status_name(status);
    return {};
  }
  std::shared_ptr<attnrt_context> context(raw, attnrt_context_release);
  const std::array<int64_t, 4> shape = {1, p.heads, p.len, p.dim}; // [B, H, L, D]
  return [kernel, context, shape, &t]() {
    const attnrt_tensor inputs[3] = {{t.q.get(), ATTNRT_F32, 4, shape.data(), nullptr},
                                     {t.k.get(), ATTNRT_F32, 4, shape.data(), nullptr},
                                     {t.v.get(), ATTNRT_F32, 4, shape.data(), nullptr}};
    attnrt_tensor outputs[1] = {{t.o.get(), ATTNRT_F32, 4, shape.data(), nullptr}};
    if (attnrt_status status = attnrt_invoke(context.get(), kernel, inputs, 3, outputs, 1)) {
      std::fprintf(stderr, "attnc %s: %s: %s\n", kernel->name, attnrt_status_name(status),
                   attnrt_context_last_error(context.get()));
      std::abort();
    }
  };
}

Runner prepare_attnc(const Problem &p, Tensors &t, const Options &, std::string *skip) {
#ifdef ATTNC_BENCH_HAVE_ATTNC
  static const KernelSet mlir = {&bench_attention_d64_kernel, &bench_attention_d64_causal_kernel,
                                 &bench_attention_d128_kernel,
                                 &bench_attention_d128_causal_kernel};
  return prepare_kernel(mlir, p, t, skip);
#else
  (void)p, (void)t;
  *skip = "built without attnc kernels (-DATTNC_BENCH_ATTNC=OFF)";
  return {};
#endif
}

Runner prepare_attnc_halide(const Problem &p, Tensors &t, const Options &, std::string *skip) {
#ifdef ATTNC_BENCH_HAVE_HALIDE
  static const KernelSet halide = {
      &bench_halide_attention_d64_kernel, &bench_halide_attention_d64_causal_kernel,
      &bench_halide_attention_d128_kernel, &bench_halide_attention_d128_causal_kernel};
  return prepare_kernel(halide, p, t, skip);
#else
  (void)p, (void)t;
  *skip = "built without the halide backend's kernels (-DATTNC_BENCH_HALIDE=OFF)";
  return {};
#endif
}

// The autoschedulers' kernels: D=64 (both masks) and D=128 non-causal, the
// shapes run_baseline.sh times.
#ifdef ATTNC_BENCH_HAVE_HALIDE_AUTO
#define ATTNC_AUTO_KERNELS(s)                                                        \
  KernelSet {                                                                        \
    &bench_halide_##s##_attention_d64_kernel, &bench_halide_##s##_attention_d64_causal_kernel, \
        &bench_halide_##s##_attention_d128_kernel, nullptr                           \
  }
#define ATTNC_AUTO_METHOD(s)                                                         \
  Runner prepare_attnc_halide_##s(const Problem &p, Tensors &t, const Options &,     \
                                  std::string *skip) {                               \
    static const KernelSet set = ATTNC_AUTO_KERNELS(s);                              \
    return prepare_kernel(set, p, t, skip);                                          \
  }
#else
#define ATTNC_AUTO_METHOD(s)                                                         \
  Runner prepare_attnc_halide_##s(const Problem &, Tensors &, const Options &,       \
                                  std::string *skip) {                               \
    *skip = "built without the autoscheduled kernels (-DATTNC_BENCH_HALIDE_AUTO=OFF)"; \
    return {};                                                                       \
  }
#endif
ATTNC_AUTO_METHOD(adams2019)
ATTNC_AUTO_METHOD(mullapudi2016)
ATTNC_AUTO_METHOD(li2018)

struct Method {
  const char *name;
  const char *summary;
  PrepareFn prepare;
  bool attention = true; // false: a calibration row, not checked against the reference
};

const Method kMethods[] = {
    {"unfused", "OpenBLAS sgemm QK^T, softmax (scalar expf), sgemm PV per head",
     prepare_unfused},
    {"unfused-vexp", "as unfused, softmax vectorised (-ffast-math, libmvec)",
     prepare_unfused_vexp},
    {"naive", "scalar loops, one query row at a time", prepare_naive},
    {"attnc", "attnc-compiled kernel through attnrt (--backend mlir)", prepare_attnc},
    {"attnc-halide", "attnc-compiled kernel, --backend halide, hand schedule",
     prepare_attnc_halide},
    {"attnc-halide-adams2019", "as attnc-halide, --schedule auto:adams2019",
     prepare_attnc_halide_adams2019},
    {"attnc-halide-mullapudi2016", "as attnc-halide, --schedule auto:mullapudi2016",
     prepare_attnc_halide_mullapudi2016},
    {"attnc-halide-li2018", "as attnc-halide, --schedule auto:li2018",
     prepare_attnc_halide_li2018},
    {"sgemm-only", "calibration: unfused's two sgemms, no softmax", prepare_sgemm_only, false},
};

const Method *find_method(const std::string &name) {
  for (const Method &m : kMethods)
    if (name == m.name) return &m;
  return nullptr;
}

//===-- Measurement -----------------------------------------------------------===//

// A "Vm...:" field of /proc/self/status, in KiB; -1 if unreadable.
long proc_status_kib(const char *field) {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
      kib = std::strtol(line + n + 1, nullptr, 10);
      break;
    }
  std::fclose(f);
  return kib;
}

// VmHWM: the peak resident set of this process.
long peak_rss_kib() { return proc_status_kib("VmHWM"); }

// Resident set when main() started: the program and its libraries, before any
// tensor exists. peak - base - inputs/outputs is roughly the method's own.
long g_base_rss_kib = -1;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string json_escape(const std::string &s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if ((unsigned char)c < 0x20) r += ' ';
    else r += c;
  }
  return r;
}

std::string blas_name() {
  std::string s = openblas_get_config();
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + " core=" + openblas_get_corename();
}

void print_header(const Options &o) {
  if (o.json) return;
  const Problem p = make_problem(o, o.heads, o.len);
  std::printf("attention forward f32: B=1 H=%lld L=%lld D=%lld %s, threads=%d, "
              "median of %d runs after 1 warm-up\n",
              (long long)p.heads, (long long)p.len, (long long)p.dim,
              p.causal ? "causal" : "non-causal", p.threads, o.repeat);
  std::printf("flops counted: 4*L^2*D per head = %.3f GFLOP%s\n", p.flops() * 1e-9,
              p.causal ? " (the dense count, also for causal, so rates compare like times)"
                       : "");
  std::printf("blas: %s; softmax of unfused built with: %s; of unfused-vexp: %s\n",
              blas_name().c_str(), attnc_bench::softmax_rows_scalar_exp_flags(),
              attnc_bench::softmax_rows_vector_exp_flags());
  std::printf("inputs+output: %.1f MiB\n", 4.0 * p.elems() * 4 / (1024.0 * 1024.0));
}

void print_table_header(const Options &o) {
  if (o.json || o.no_header) return;
  std::printf("%-26s %10s %10s %10s %9s %14s\n", "method", "median ms", "min ms", "max ms",
              "GFLOP/s", "peak RSS MiB");
}

// Times one method in this process and prints its row.
int run_one(const Options &o, const Method &m) {
  const Problem p = make_problem(o, o.heads, o.len);
  Tensors t = make_tensors(p, o.seed);
  std::string skip;
  Runner run = m.prepare(p, t, o, &skip);
  if (!run) {
    if (o.json)
      std::printf("{\"kind\":\"result\",\"method\":\"%s\",\"status\":\"skipped\","
                  "\"reason\":\"%s\",\"heads\":%lld,\"len\":%lld,\"dim\":%lld,"
                  "\"causal\":%s,\"threads\":%d}\n",
                  m.name, json_escape(skip).c_str(), (long long)p.heads, (long long)p.len,
                  (long long)p.dim, p.causal ? "true" : "false", p.threads);
    else
      std::printf("%-26s skipped: %s\n", m.name, skip.c_str());
    std::fflush(stdout);
    return 0;
  }
  auto t0 = std::chrono::steady_clock::now();
  run(); // warm-up
  const double warm = seconds_since(t0);
  int repeat = o.repeat;
  if (warm * repeat > o.max_seconds)
    repeat = std::max(1, int(o.max_seconds / std::max(warm, 1e-9)));
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(seconds_since(t0) * 1e3);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const double gflops = p.flops() / (median * 1e-3) * 1e-9;
  const long rss = peak_rss_kib();
  // Keep the output observable so nothing is optimised away.
  double checksum = 0;
  for (int64_t i = 0; i < p.elems(); i += 97) checksum += t.o[i];
  if (o.json) {
    std::printf("{\"kind\":\"result\",\"method\":\"%s\",\"status\":\"ok\",\"heads\":%lld,"
                "\"len\":%lld,\"dim\":%lld,\"causal\":%s,\"threads\":%d,\"repeat\":%d,"
                "\"median_ms\":%.4f,\"min_ms\":%.4f,\"max_ms\":%.4f,\"runs_ms\":[",
                m.name, (long long)p.heads, (long long)p.len, (long long)p.dim,
                p.causal ? "true" : "false", p.threads, repeat, median, sorted.front(),
                sorted.back());
    for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.4f", i ? "," : "", ms[i]);
    std::printf("],\"gflops\":%.3f,\"flops\":%.0f,\"flop_count\":\"4*L^2*D per head%s\","
                "\"peak_rss_kib\":%ld,\"base_rss_kib\":%ld,\"io_kib\":%lld,\"checksum\":%.6g,\"blas\":\"%s\","
                "\"softmax_flags\":\"%s\"}\n",
                gflops, p.flops(), p.causal ? " (dense count, also for causal)" : "", rss, g_base_rss_kib,
                (long long)(4 * p.elems() * 4 / 1024), checksum,
                json_escape(blas_name()).c_str(),
                json_escape(std::string(m.name) == "unfused-vexp" ? attnc_bench::softmax_rows_vector_exp_flags() : attnc_bench::softmax_rows_scalar_exp_flags()).c_str());
  } else {
    std::printf("%-26s %10.2f %10.2f %10.2f %9.1f %14.1f%s\n", m.name, median, sorted.front(),
                sorted.back(), gflops, rss / 1024.0,
                repeat < o.repeat ? ("  (" + std::to_string(repeat) + " runs: time cap)").c_str()
                                  : "");
  }
  std::fflush(stdout);
  return 0;
}

// Float64 reference of one problem, [H][L][D].
std::vector<double> reference_f64(const Problem &p, const Tensors &t) {
  const int64_t L = p.len, D = p.dim;
  std::vector<double> out(p.elems()), s(L);
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t h = 0; h < p.heads; ++h)
    for (int64_t i = 0; i < L; ++i) {
      const int64_t n = p.causal ? i + 1 : L;
      const float *q = t.q.get() + (h * L + i) * D;
      double max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const float *k = t.k.get() + (h * L + j) * D;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(q[d]) * k[d];
        s[j] = dot * scale;
        max = std::max(max, s[j]);
      }
      for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - max));
      double *o = out.data() + (h * L + i) * D;
      for (int64_t j = 0; j < n; ++j) {
        const float *v = t.v.get() + (h * L + j) * D;
        for (int64_t d = 0; d < D; ++d) o[d] += s[j] / sum * v[d];
      }
    }
  return out;
}

// Every method against the float64 reference and against the first method
// that runs (naive is the scalar reading of the definition), at a small size.
bool check(const Options &o) {
  const double tolerance = 1e-4; // outputs are averages of V rows in [-1, 1]
  Options co = o;
  co.naive_max_len = std::max(co.naive_max_len, o.check_len);
  const Problem p = make_problem(o, o.check_heads, o.check_len);
  Tensors t = make_tensors(p, o.seed + 1000);
  const std::vector<double> ref = reference_f64(p, t);
  struct Row {
    const char *name;
    double vs_ref, vs_naive;
  };
  std::vector<Row> rows;
  std::vector<float> naive_out;
  bool ok = true;
  {
    Buffer row = alloc_floats(p.len);
    naive_attention(p, t.q.get(), t.k.get(), t.v.get(), t.o.get(), row.get());
    naive_out.assign(t.o.get(), t.o.get() + p.elems());
  }
  for (const Method &m : kMethods) {
    if (!m.attention) continue;
    std::string skip;
    std::fill(t.o.get(), t.o.get() + p.elems(), std::numeric_limits<float>::quiet_NaN());
    Runner run = m.prepare(p, t, co, &skip);
    if (!run) continue;
    run();
    double vr = 0, vn = 0;
    for (int64_t i = 0; i < p.elems(); ++i) {
      const double x = t.o[i];
      const double dr = std::fabs(x - ref[i]), dn = std::fabs(x - double(naive_out[i]));
      vr = std::isnan(dr) ? INFINITY : std::max(vr, dr);
      vn = std::isnan(dn) ? INFINITY : std::max(vn, dn);
      if (!(dr <= tolerance)) ok = false; // catches NaN
    }
    rows.push_back({m.name, vr, vn});
  }
  if (o.json) {
    std::printf("{\"kind\":\"check\",\"heads\":%lld,\"len\":%lld,\"dim\":%lld,\"causal\":%s,"
                "\"threads\":%d,\"tolerance\":%g,\"ok\":%s,\"methods\":[",
                (long long)p.heads, (long long)p.len, (long long)p.dim,
                p.causal ? "true" : "false", p.threads, tolerance, ok ? "true" : "false");
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("%s{\"method\":\"%s\",\"max_abs_diff_vs_f64\":%.3g,"
                  "\"max_abs_diff_vs_naive\":%.3g}",
                  i ? "," : "", rows[i].name, rows[i].vs_ref, rows[i].vs_naive);
    std::printf("]}\n");
  } else {
    std::printf("check at H=%lld L=%lld D=%lld%s: max |diff|", (long long)p.heads,
                (long long)p.len, (long long)p.dim, p.causal ? " causal" : "");
    for (const Row &r : rows)
      std::printf("  %s %.2g vs f64, %.2g vs naive;", r.name, r.vs_ref, r.vs_naive);
    std::printf("  %s (tolerance %g vs f64)\n", ok ? "ok" : "MISMATCH", tolerance);
  }
  std::fflush(stdout);
  return ok;
}

// Runs `exe --method NAME` in a child process; its output goes straight to
// our stdout. Returns the child's exit status.
int run_child(const std::string &exe, const Options &o, const char *method) {
  std::vector<std::string> args = {
      exe, "--heads", std::to_string(o.heads), "--len", std::to_string(o.len),
      "--dim", std::to_string(o.dim), "--threads", std::to_string(o.threads),
      "--repeat", std::to_string(o.repeat), "--naive-max-len", std::to_string(o.naive_max_len),
      "--max-seconds", std::to_string((long long)o.max_seconds), "--seed", std::to_string(o.seed),
      "--method", method, "--no-check", "--no-header"};
  if (o.causal) args.push_back("--causal");
  if (o.json) args.push_back("--json");
  std::vector<char *> argv;
  for (std::string &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid;
  if (int e = posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ)) {
    std::fprintf(stderr, "cannot run %s: %s\n", exe.c_str(), std::strerror(e));
    return 1;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::fprintf(stderr, "%s --method %s: killed by signal %d\n", exe.c_str(), method,
               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 1;
}

std::string self_exe(const char *argv0) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return argv0;
  buf[n] = 0;
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  g_base_rss_kib = proc_status_kib("VmRSS");
  const Options o = parse_options(argc, argv);
  openblas_set_num_threads(o.threads);

  if (o.method != "all" && !find_method(o.method)) {
    std::fprintf(stderr, "--method: unknown method '%s'; known: all", o.method.c_str());
    for (const Method &m : kMethods) std::fprintf(stderr, " %s", m.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  if (!o.no_header) print_header(o);
  if (!o.no_check && !check(o)) {
    std::fprintf(stderr, "methods disagree: not timing\n");
    return 1;
  }
  if (o.method != "all") {
    print_table_header(o);
    return run_one(o, *find_method(o.method));
  }
  // Each method in a fresh process, so each reported peak RSS is its own.
  print_table_header(o);
  const std::string exe = self_exe(argv[0]);
  int status = 0;
  for (const Method &m : kMethods)
    if (int s = run_child(exe, o, m.name)) status = s;
  return status;
}
