// gpubench: the GPU performance probe of gpu-provision certify.
//
// Measures on one GPU and prints ONE JSON object on stdout:
//   gemm_bf16  dense BF16 GEMM through cublasGemmEx, FP32 accumulate (CUBLAS_COMPUTE_32F), TFLOP/s
//              = 2*M*N*K*iterations / elapsed, timed with CUDA events after warm-up iterations;
//   copy       device-to-device cudaMemcpyAsync, GB/s counting bytes read + bytes written (2x the copy size);
//   h2d, d2h   pinned (cudaMallocHost) host<->device copies, GB/s of bytes moved.
// GB is 10^9 bytes. On any CUDA/cuBLAS error it prints {"error": "..."} and exits 1.
//
// Build: nvcc -O2 -o gpubench gpubench.cu -lcublas
// Usage: gpubench [--device N] [--tests gemm,copy,h2d,d2h] [--size N] [--iters N] [--warmup N]
//                 [--copy-mib N] [--xfer-mib N] [--seconds S]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Options {
  int device = 0;
  std::string tests = "gemm,copy,h2d,d2h";
  int size = 8192;       // M = N = K of the GEMM
  int iters = 50;        // timed iterations per measurement
  int warmup = 10;       // untimed iterations first
  size_t copy_mib = 1024;  // device-to-device buffer size
  size_t xfer_mib = 256;   // host<->device buffer size
  int seconds = 0;       // burn-in: repeat the GEMM this long before measuring
};

std::string g_error;

bool cuda_ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  if (g_error.empty()) g_error = std::string(what) + ": " + cudaGetErrorString(status);
  return false;
}

bool blas_ok(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  if (g_error.empty()) g_error = std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status));
  return false;
}

bool wants(const Options& o, const char* test) {
  std::string list = "," + o.tests + ",";
  return list.find(std::string(",") + test + ",") != std::string::npos;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--device") o.device = std::atoi(value);
    else if (key == "--tests") o.tests = value;
    else if (key == "--size") o.size = std::atoi(value);
    else if (key == "--iters") o.iters = std::atoi(value);
    else if (key == "--warmup") o.warmup = std::atoi(value);
    else if (key == "--copy-mib") o.copy_mib = std::strtoull(value, nullptr, 10);
    else if (key == "--xfer-mib") o.xfer_mib = std::strtoull(value, nullptr, 10);
    else if (key == "--seconds") o.seconds = std::atoi(value);
    else { std::fprintf(stderr, "gpubench: unknown option %s\n", key.c_str()); std::exit(2); }
  }
  return o;
}

// Elapsed milliseconds of `body` run `count` times on `stream`, between two CUDA events.
template <typename Body>
float timed(cudaStream_t stream, int count, Body body) {
  cudaEvent_t start, stop;
  float ms = 0.0f;
  if (!cuda_ok(cudaEventCreate(&start), "cudaEventCreate") || !cuda_ok(cudaEventCreate(&stop), "cudaEventCreate"))
    return -1.0f;
  cuda_ok(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < count; ++i) body();
  cuda_ok(cudaEventRecord(stop, stream), "cudaEventRecord");
  cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize");
  cuda_ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return g_error.empty() ? ms : -1.0f;
}

// Dense BF16 GEMM C = A * B with FP32 accumulation; returns TFLOP/s or -1.
double gemm_tflops(const Options& o, cudaStream_t stream, double* ms_out) {
  const size_t n = static_cast<size_t>(o.size);
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  cublasHandle_t handle = nullptr;
  double result = -1.0;
  if (cuda_ok(cudaMalloc(&a, n * n * sizeof(__nv_bfloat16)), "cudaMalloc A") &&
      cuda_ok(cudaMalloc(&b, n * n * sizeof(__nv_bfloat16)), "cudaMalloc B") &&
      cuda_ok(cudaMalloc(&c, n * n * sizeof(__nv_bfloat16)), "cudaMalloc C") &&
      cuda_ok(cudaMemsetAsync(a, 0x3c, n * n * sizeof(__nv_bfloat16), stream), "cudaMemset A") &&
      cuda_ok(cudaMemsetAsync(b, 0x3c, n * n * sizeof(__nv_bfloat16), stream), "cudaMemset B") &&
      blas_ok(cublasCreate(&handle), "cublasCreate") && blas_ok(cublasSetStream(handle, stream), "cublasSetStream")) {
    const float alpha = 1.0f, beta = 0.0f;
    const int m = o.size;
    auto one = [&]() {
      blas_ok(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a, CUDA_R_16BF, m, b, CUDA_R_16BF, m,
                           &beta, c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
    };
    const auto burn_until = std::chrono::steady_clock::now() + std::chrono::seconds(o.seconds);
    do {
      for (int i = 0; i < o.warmup && g_error.empty(); ++i) one();
      cuda_ok(cudaStreamSynchronize(stream), "warm-up");
    } while (g_error.empty() && std::chrono::steady_clock::now() < burn_until);
    const float ms = g_error.empty() ? timed(stream, o.iters, one) : -1.0f;
    if (ms > 0) {
      *ms_out = ms;
      result = 2.0 * n * n * n * o.iters / (ms / 1e3) / 1e12;
    }
  }
  if (handle) cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return result;
}

// Device-to-device copy; GB/s counting bytes read plus bytes written.
double copy_gbps(const Options& o, cudaStream_t stream, size_t* bytes_out) {
  const size_t bytes = o.copy_mib << 20;
  void *src = nullptr, *dst = nullptr;
  double result = -1.0;
  if (cuda_ok(cudaMalloc(&src, bytes), "cudaMalloc copy src") && cuda_ok(cudaMalloc(&dst, bytes), "cudaMalloc copy dst") &&
      cuda_ok(cudaMemsetAsync(src, 1, bytes, stream), "cudaMemset copy")) {
    auto one = [&]() { cuda_ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpy D2D"); };
    for (int i = 0; i < o.warmup; ++i) one();
    const float ms = timed(stream, o.iters, one);
    if (ms > 0) {
      *bytes_out = bytes;
      result = 2.0 * bytes * o.iters / (ms / 1e3) / 1e9;
    }
  }
  cudaFree(src);
  cudaFree(dst);
  return result;
}

// Pinned host<->device copy in one direction; GB/s of bytes moved.
double transfer_gbps(const Options& o, cudaStream_t stream, bool to_device) {
  const size_t bytes = o.xfer_mib << 20;
  void *host = nullptr, *dev = nullptr;
  double result = -1.0;
  if (cuda_ok(cudaMallocHost(&host, bytes), "cudaMallocHost") && cuda_ok(cudaMalloc(&dev, bytes), "cudaMalloc xfer")) {
    std::memset(host, 1, bytes);
    auto one = [&]() {
      if (to_device) cuda_ok(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpy H2D");
      else cuda_ok(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpy D2H");
    };
    for (int i = 0; i < o.warmup / 2 + 1; ++i) one();
    const float ms = timed(stream, o.iters / 2 + 1, one);
    if (ms > 0) result = 1.0 * bytes * (o.iters / 2 + 1) / (ms / 1e3) / 1e9;
  }
  cudaFreeHost(host);
  cudaFree(dev);
  return result;
}

void print_json_string(const std::string& text) {
  std::putchar('"');
  for (char ch : text) {
    if (ch == '"' || ch == '\\') std::printf("\\%c", ch);
    else if (static_cast<unsigned char>(ch) < 0x20) std::printf("\\u%04x", ch);
    else std::putchar(ch);
  }
  std::putchar('"');
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int count = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;
  std::printf("{\"tool\":\"gpubench\",\"version\":1,\"device\":%d", o.device);
  if (cuda_ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount") && o.device < count &&
      cuda_ok(cudaSetDevice(o.device), "cudaSetDevice") && cuda_ok(cudaGetDeviceProperties(&prop, o.device), "props") &&
      cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate")) {
    char bus[32];
    cudaDeviceGetPCIBusId(bus, sizeof bus, o.device);
    std::printf(",\"name\":");
    print_json_string(prop.name);
    std::printf(",\"pci_bus_id\":\"%s\"", bus);
    if (wants(o, "gemm") && g_error.empty()) {
      double ms = 0;
      const double tflops = gemm_tflops(o, stream, &ms);
      if (tflops > 0)
        std::printf(",\"gemm_bf16\":{\"tflops\":%.2f,\"m\":%d,\"n\":%d,\"k\":%d,\"iters\":%d,\"ms\":%.3f,"
                    "\"accumulate\":\"fp32\",\"burn_seconds\":%d}", tflops, o.size, o.size, o.size, o.iters, ms,
                    o.seconds);
    }
    if (wants(o, "copy") && g_error.empty()) {
      size_t bytes = 0;
      const double gbps = copy_gbps(o, stream, &bytes);
      if (gbps > 0)
        std::printf(",\"copy\":{\"gb_per_s\":%.1f,\"bytes\":%zu,\"counts\":\"bytes read + bytes written\"}", gbps, bytes);
    }
    for (int dir = 0; dir < 2 && g_error.empty(); ++dir) {
      const char* key = dir == 0 ? "h2d" : "d2h";
      if (!wants(o, key)) continue;
      const double gbps = transfer_gbps(o, stream, dir == 0);
      if (gbps > 0)
        std::printf(",\"%s\":{\"gb_per_s\":%.2f,\"bytes\":%zu,\"memory\":\"pinned\"}", key, gbps, o.xfer_mib << 20);
    }
  } else if (g_error.empty()) {
    g_error = "device " + std::to_string(o.device) + " not present (" + std::to_string(count) + " GPUs)";
  }
  std::printf(",\"error\":");
  if (g_error.empty()) std::printf("null");
  else print_json_string(g_error);
  std::printf("}\n");
  if (stream) cudaStreamDestroy(stream);
  return g_error.empty() ? 0 : 1;
}
