//===- machine_limits.cpp - The CPU's f32 FMA peak and streaming read -----===//
//
// The two limits attention kernels are judged against: prefill is bound by
// the f32 FMA rate, decode by how fast memory streams K and V in. Measured
// here rather than taken from data sheets, because the machines attnc runs on
// share their cores (2 vCPUs of a busy host) and differ (AVX2 EPYC, AVX-512
// Xeon).
//
//   build/bin/machine_limits [--threads N] [--repeat R] [--mib M] [--json]
//
// - fma: independent vector FMA chains (enough to cover the FMA latency on
//   every x86 core), counted as 2 flops per lane; the widest ISA the CPU has
//   (AVX-512F or AVX2+FMA).
// - read: the sum of an M MiB f32 array (default 512, far beyond any cache)
//   with vector loads, each thread its own contiguous slice.
// Each is the median of R runs, on 1 thread and on N (default: every CPU).
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kChains = 12;              // 2 FMA pipes x latency 4-6
constexpr long kFmaIterations = 1 << 24; // ~0.1-0.3 s per thread

__attribute__((target("avx2,fma"))) double fmaAvx2(long iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm256_set1_ps(float(c) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c)
    sum = _mm256_add_ps(sum, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  return lanes[0]; // Keeps the loop alive.
}

__attribute__((target("avx512f"))) double fmaAvx512(long iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm512_set1_ps(float(c) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c)
    sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2"))) double sumAvx2(const float *data, long count) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  long i = 0;
  for (; i + 32 <= count; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(data + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(data + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_loadu_ps(data + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_loadu_ps(data + i + 24));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes,
                   _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  double total = 0;
  for (float lane : lanes)
    total += lane;
  for (; i < count; ++i)
    total += data[i];
  return total;
}

/// Seconds for `work(thread)` on `threads` threads at once.
double timeThreads(int threads, const std::function<void(int)> &work) {
  std::vector<std::thread> pool;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(work, t);
  for (std::thread &thread : pool)
    thread.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Result {
  double fmaGflops, readGBs;
};

Result measure(int threads, int repeat, const float *data, long count,
               bool avx512) {
  std::vector<double> fma, read;
  volatile double sink = 0;
  for (int r = 0; r < repeat; ++r) {
    double seconds = timeThreads(threads, [&](int) {
      sink = avx512 ? fmaAvx512(kFmaIterations) : fmaAvx2(kFmaIterations);
    });
    double lanes = avx512 ? 16 : 8;
    fma.push_back(2.0 * lanes * kChains * double(kFmaIterations) * threads /
                  seconds * 1e-9);
    long slice = count / threads;
    seconds = timeThreads(threads, [&](int t) {
      sink = sumAvx2(data + t * slice, slice);
    });
    read.push_back(double(slice) * threads * sizeof(float) / seconds * 1e-9);
  }
  (void)sink;
  return {median(fma), median(read)};
}

} // namespace

int main(int argc, char **argv) {
  int threads = int(std::thread::hardware_concurrency()), repeat = 5;
  long mib = 512;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "machine_limits: %s needs a value\n", argv[i]);
        std::exit(1);
      }
      char *end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 1 << 20) {
        std::fprintf(stderr, "machine_limits: %s %s: expected a number >= 1\n",
                     flag.c_str(), argv[i]);
        std::exit(1);
      }
      return v;
    };
    if (flag == "--threads")
      threads = int(value());
    else if (flag == "--repeat")
      repeat = int(value());
    else if (flag == "--mib")
      mib = value();
    else if (flag == "--json")
      json = true;
    else {
      std::fprintf(stderr,
                   "usage: machine_limits [--threads N] [--repeat R] [--mib M] "
                   "[--json]\n");
      return 1;
    }
  }
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "machine_limits: needs a CPU with AVX2 and FMA\n");
    return 1;
  }
  bool avx512 = __builtin_cpu_supports("avx512f");
  long count = mib * (1L << 20) / long(sizeof(float));
  std::unique_ptr<float[]> data(new float[size_t(count)]);
  for (long i = 0; i < count; ++i) // Touch every page before timing.
    data[size_t(i)] = float(i & 1023) * 1e-3f;

  Result one = measure(1, repeat, data.get(), count, avx512);
  Result all = measure(threads, repeat, data.get(), count, avx512);
  const char *isa = avx512 ? "avx512f" : "avx2+fma";
  if (json) {
    std::printf("{\"isa\":\"%s\",\"threads\":%d,\"repeat\":%d,\"read_mib\":%ld,"
                "\"fma_gflops_1\":%.2f,\"read_gbs_1\":%.2f,"
                "\"fma_gflops_n\":%.2f,\"read_gbs_n\":%.2f}\n",
                isa, threads, repeat, mib, one.fmaGflops, one.readGBs,
                all.fmaGflops, all.readGBs);
    return 0;
  }
  std::printf("f32 FMA peak (%s), streaming read of %ld MiB; medians of %d\n",
              isa, mib, repeat);
  std::printf("| threads | FMA GFLOP/s | read GB/s |\n|---:|---:|---:|\n");
  std::printf("| 1 | %.1f | %.1f |\n", one.fmaGflops, one.readGBs);
  std::printf("| %d | %.1f | %.1f |\n", threads, all.fmaGflops, all.readGBs);
  return 0;
}
