// toy_decoder: one causal self-attention layer that decodes token by token
// with a growing key/value cache. The attention itself is the kernel attnc
// compiled from toy_attention.json; everything else (embeddings, the q/k/v
// projections, picking the next token) is plain C++ here.
//
// Each step checks the kernel's output against a double-precision attention
// computed below, and the program exits 1 if the largest error is over 1e-4.
//
// Compiled for a CUDA target (cmake -DATTNC_EMBED_TARGET=cuda-sm90), the
// kernel runs on CUDA device 0: the buffers are copied there and back around
// each call. Without a GPU the program says why and exits 77.

#include "toy_attention.h" // written by `attnc compile`: toy_attention(ctx, inputs, outputs)

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr int64_t H = 4, D = 32, E = H * D; // heads, head dim, model width
constexpr int64_t kVocab = 50, kMaxT = 48; // vocabulary, cache capacity

// The kernel reads and writes the caller's memory, no copies. attnrt_invoke
// checks each buffer against toy_attention_kernel.alignment; a cache line
// (64 bytes) suits vector loads whatever the kernel asks.
alignas(64) float k_cache[kMaxT * E]; // [1, T, H, D]: appending a token appends E floats
alignas(64) float v_cache[kMaxT * E];
alignas(64) float q[kMaxT * E];       // [1, S, H, D], S = new tokens this step
alignas(64) float o[kMaxT * E];       // [1, S, H, D]

// A random toy model: token and position embeddings, Wq, Wk, Wv, Wo.
std::vector<float> random_floats(int64_t n, float stddev) {
  static std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> w(n);
  for (float &x : w) x = normal(rng);
  return w;
}
const float kWeightStd = 1.0f / std::sqrt(float(E));
struct Model {
  std::vector<float> embed = random_floats(kVocab * E, 1.0f);
  std::vector<float> position = random_floats(kMaxT * E, 1.0f);
  std::vector<float> wq = random_floats(E * E, kWeightStd), wk = random_floats(E * E, kWeightStd),
                     wv = random_floats(E * E, kWeightStd), wo = random_floats(E * E, kWeightStd);
};

// y[E] = w[E][E] · x[E]
void project(const std::vector<float> &w, const float *x, float *y) {
  for (int64_t r = 0; r < E; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < E; ++c) sum += w[r * E + c] * x[c];
    y[r] = sum;
  }
}

// Largest |o - attention(q, k, v)| over the S new queries, in double
// precision: query i sits at position T - S + i and sees keys 0..that (causal).
double max_error(int64_t S, int64_t T) {
  double worst = 0;
  std::vector<double> p(T);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const float *qi = q + (i * H + h) * D;
      const int64_t keys = T - S + i + 1;
      double max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(qi[d]) * k_cache[(j * H + h) * D + d];
        p[j] = dot / std::sqrt(double(D)); // the graph's default scale, 1/sqrt(D)
        max = std::fmax(max, p[j]);
      }
      for (int64_t j = 0; j < keys; ++j) sum += (p[j] = std::exp(p[j] - max));
      for (int64_t d = 0; d < D; ++d) {
        double expect = 0;
        for (int64_t j = 0; j < keys; ++j) expect += p[j] / sum * v_cache[(j * H + h) * D + d];
        double error = std::fabs(o[(i * H + h) * D + d] - expect);
        worst = std::isnan(error) ? INFINITY : std::fmax(worst, error);
      }
    }
  return worst;
}

// A CUDA kernel's tensors live on the device: device copies of q, the
// caches and o, refreshed around each call (a real engine would keep the
// cache there and append to it).
struct DeviceBuffers {
  attnrt_context *context;
  void *data[4] = {};
  explicit DeviceBuffers(attnrt_context *context) : context(context) {}
  ~DeviceBuffers() {
    for (void *buffer : data) attnrt_device_release(context, buffer);
  }
  attnrt_status allocate() {
    for (void *&buffer : data)
      if (attnrt_status status = attnrt_device_allocate(context, sizeof q, &buffer)) return status;
    return ATTNRT_OK;
  }
};

} // namespace

int main() {
  const Model model;
  const bool cuda = std::strncmp(toy_attention_kernel.target, "cuda-", 5) == 0;
  attnrt_context_options options;
  attnrt_context_options_initialize(&options); // threads = 0: one per core
  attnrt_context *context = nullptr;
  if (attnrt_context_create_on_device(&options, cuda ? ATTNRT_DEVICE_CUDA : ATTNRT_DEVICE_CPU, 0,
                                      &context) != ATTNRT_OK) {
    std::fprintf(stderr, "cannot create the attnrt context\n");
    return 1;
  }
  // Released last, after the device buffers.
  struct Release {
    attnrt_context *context;
    ~Release() { attnrt_context_release(context); }
  } release{context};
  DeviceBuffers device(context);
  if (cuda) {
    int32_t count = 0;
    char why[512] = "";
    if (attnrt_device_count(ATTNRT_DEVICE_CUDA, &count, why, sizeof why) != ATTNRT_OK ||
        count == 0) {
      std::printf("toy_decoder: kernel for %s, no CUDA device: %s\n", toy_attention_kernel.target,
                  count == 0 && !why[0] ? "the driver counts none" : why);
      return 77;
    }
    if (attnrt_status status = device.allocate()) {
      std::fprintf(stderr, "device memory: %s: %s\n", attnrt_status_name(status),
                   attnrt_context_last_error(context));
      return 1;
    }
  }

  std::vector<int> tokens = {1, 7, 3, 42, 7, 19}; // the prompt
  int64_t T = 0;                                  // tokens in the cache
  double worst = 0;
  std::vector<float> x(E), h(E);
  // Step 0 feeds the whole prompt at once (S = 6); every later step feeds
  // the one token the previous step chose (S = 1). T grows by S each step.
  for (int step = 0; T < kMaxT; ++step) {
    const int64_t S = step == 0 ? int64_t(tokens.size()) : 1;
    for (int64_t i = 0; i < S; ++i) {
      const int64_t pos = T + i, token = tokens[int64_t(tokens.size()) - S + i];
      for (int64_t e = 0; e < E; ++e)
        x[e] = model.embed[token * E + e] + model.position[pos * E + e];
      project(model.wq, x.data(), q + i * E);
      project(model.wk, x.data(), k_cache + pos * E);
      project(model.wv, x.data(), v_cache + pos * E);
    }
    T += S;

    // Tensor views of our buffers; the kernel binds S and T from the shapes.
    const int64_t q_shape[] = {1, S, H, D}, kv_shape[] = {1, T, H, D};
    float *host[] = {q, k_cache, v_cache, o};
    const size_t bytes[] = {size_t(S * E) * 4, size_t(T * E) * 4, size_t(T * E) * 4,
                            size_t(S * E) * 4};
    void *data[4];
    for (int n = 0; n < 4; ++n) {
      data[n] = cuda ? device.data[n] : host[n];
      if (cuda && n < 3 && attnrt_device_upload(context, data[n], host[n], bytes[n])) {
        std::fprintf(stderr, "upload: %s\n", attnrt_context_last_error(context));
        return 1;
      }
    }
    const attnrt_tensor inputs[] = {{data[0], ATTNRT_F32, 4, q_shape, nullptr},
                                    {data[1], ATTNRT_F32, 4, kv_shape, nullptr},
                                    {data[2], ATTNRT_F32, 4, kv_shape, nullptr}};
    attnrt_tensor outputs[] = {{data[3], ATTNRT_F32, 4, q_shape, nullptr}};
    if (attnrt_status status = toy_attention(context, inputs, outputs)) {
      std::fprintf(stderr, "toy_attention: %s: %s\n", attnrt_status_name(status),
                   attnrt_context_last_error(context));
      return 1;
    }
    if (cuda && attnrt_device_download(context, o, data[3], bytes[3])) {
      std::fprintf(stderr, "download: %s\n", attnrt_context_last_error(context));
      return 1;
    }
    const double error = max_error(S, T);
    worst = std::fmax(worst, error);

    // Next token: the output projection of the last query's attention,
    // scored against every token embedding.
    project(model.wo, o + (S - 1) * E, h.data());
    int best = 0;
    double best_score = -INFINITY;
    for (int v = 0; v < kVocab; ++v) {
      double score = 0;
      for (int64_t e = 0; e < E; ++e) score += h[e] * model.embed[v * E + e];
      if (score > best_score) best_score = score, best = v;
    }
    tokens.push_back(best);
    std::printf("step %2d: S=%lld T=%2lld next token %2d  max |error| %.2e\n", step,
                (long long)S, (long long)T, best, error);
  }
  const bool ok = worst <= 1e-4;
  std::printf("%zu tokens; max |error| vs double precision %.2e (tolerance 1e-4): %s\n",
              tokens.size(), worst, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
