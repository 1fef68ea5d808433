/* gpusqueeze kernels: memory-bound kernels behind a C ABI on raw device pointers and CUDA streams.
 *
 * Every function validates its arguments before touching the GPU: a bad shape, dtype, alignment or overlap returns an
 * error status and launches nothing. Tensors are dense and row-major (C-contiguous); inputs, weights and outputs share
 * one dtype; arithmetic is fp32. Calls are asynchronous on `stream` (NULL = the legacy default stream) and never
 * synchronize. gsq_last_error() says why the last failing call on this thread failed.
 *
 * Library: libgsqkernels.so (build/lib). Python: python/gpusqueeze_kernels.py (torch tensors, current stream).
 */
#ifndef GPUSQUEEZE_KERNELS_H
#define GPUSQUEEZE_KERNELS_H

#include <stdint.h>

#if defined(__GNUC__)
#define GSQ_API __attribute__((visibility("default")))
#else
#define GSQ_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* 1: the row operations, layout conversions and quantized GEMMs; 2: adds gsq_add_rms_norm. The Python module
 * (gpusqueeze.kernels) refuses a library of another version. */
#define GSQ_KERNELS_ABI_VERSION 2

typedef enum gsq_status {
  GSQ_SUCCESS = 0,
  GSQ_ERROR_INVALID_VALUE = 1, /* null pointer, bad shape, eps or probability out of range */
  GSQ_ERROR_MISALIGNED = 2,    /* a pointer not aligned to its element size */
  GSQ_ERROR_UNSUPPORTED = 3,   /* dtype unknown, shape beyond what the kernel handles */
  GSQ_ERROR_CUDA = 4           /* the launch failed (no GPU, bad device pointer, ...) */
} gsq_status;

typedef enum gsq_dtype { GSQ_FLOAT32 = 0, GSQ_FLOAT16 = 1, GSQ_BFLOAT16 = 2 } gsq_dtype;

typedef struct CUstream_st* gsq_stream; /* a cudaStream_t */

GSQ_API int gsq_kernels_abi_version(void);
GSQ_API const char* gsq_status_name(gsq_status status);
GSQ_API const char* gsq_last_error(void); /* thread-local; "" after a successful call */

/* y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias over `cols` (biased variance, as torch).
 * weight and bias may be NULL (1 and 0). x == y (in place) is allowed. */
GSQ_API gsq_status gsq_layer_norm(void* y, const void* x, const void* weight, const void* bias, int64_t rows,
                                  int64_t cols, float eps, gsq_dtype dtype, gsq_stream stream);

/* y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight; weight may be NULL. */
GSQ_API gsq_status gsq_rms_norm(void* y, const void* x, const void* weight, int64_t rows, int64_t cols, float eps,
                                gsq_dtype dtype, gsq_stream stream);

/* A decoder layer's residual add and RMSNorm in one pass (vLLM's fused_add_rms_norm):
 *   residual[r, :] = x[r, :] + residual[r, :]  (rounded to the dtype, as adding two tensors of it does), then
 *   y[r, :] = residual[r, :] / sqrt(mean(residual[r, :]^2) + eps) * weight.
 * weight may be NULL; y == x (in place) is allowed; residual must not overlap x or y. */
GSQ_API gsq_status gsq_add_rms_norm(void* y, void* residual, const void* x, const void* weight, int64_t rows,
                                    int64_t cols, float eps, gsq_dtype dtype, gsq_stream stream);

/* y[r, :] = softmax(x[r, :]) over the last dimension. */
GSQ_API gsq_status gsq_softmax(void* y, const void* x, int64_t rows, int64_t cols, gsq_dtype dtype, gsq_stream stream);

/* y = dropout(softmax(x), p): element i (row-major linear index) is kept when
 *   u(i) = ((philox4x32_10(counter = {g low, g high, offset low, offset high}, key = {seed low, seed high})
 *            word (i % 8) / 2) >> 16 * (i % 2) & 0xffff) / 65536  >=  p,   with g = i / 8,
 * and scaled by 1/(1-p); dropped elements are 0. One Philox call serves 8 elements; p acts on a 2^-16 grid.
 * Deterministic for (seed, offset); 0 <= p < 1. */
GSQ_API gsq_status gsq_softmax_dropout(void* y, const void* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                                       uint64_t offset, gsq_dtype dtype, gsq_stream stream);

/* Layout conversion of a dense 4-D tensor: NCHW -> NHWC and back. y must not overlap x. */
GSQ_API gsq_status gsq_nchw_to_nhwc(void* y, const void* x, int64_t n, int64_t c, int64_t h, int64_t w, gsq_dtype dtype,
                                    gsq_stream stream);
GSQ_API gsq_status gsq_nhwc_to_nchw(void* y, const void* x, int64_t n, int64_t c, int64_t h, int64_t w, gsq_dtype dtype,
                                    gsq_stream stream);

/* Weight-only quantization for decoding: Y[M][N] = X[M][K] · dequant(W)ᵀ (+ bias[N]) with W [N][K] as
 * torch.nn.Linear.weight, X and Y fp16 or bf16 (fp32 accumulation), 1 <= M <= 16, N and K multiples of 64, x and w
 * 16-byte aligned. Layouts (versioned; src/kernels/quant.hpp has the bit-level description):
 *   gsq.w8/1: u8 [N][K] = q + 128, q = round(w / s) in [-127, 127]; fp32 scales [N], s = max|W[n]| / 127.
 *   gsq.w4/1: u32 [N][K/8] of 4-bit u (k = 8j+2i in bits 4i.., k = 8j+2i+1 in bits 16+4i..); fp16 (scale, offset)
 *             pairs [N][K/group], w = u * scale + offset; group 64 or 128; symmetric (offset = -8 scale) or
 *             asymmetric (zero point z: offset = -z scale).
 * The quantizers run on the host: w is fp32 host memory, outputs are host buffers of the sizes above; max_rel
 * (max |w - ŵ| / max |w|) and rms_rel (‖w - ŵ‖ / ‖w‖) report the quantization error (either may be NULL). */
#define GSQ_W8_LAYOUT "gsq.w8/1"
#define GSQ_W4_LAYOUT "gsq.w4/1"
GSQ_API gsq_status gsq_quantize_w8(const float* w, int64_t n, int64_t k, uint8_t* q, float* scales, double* max_rel,
                                   double* rms_rel);
GSQ_API gsq_status gsq_quantize_w4(const float* w, int64_t n, int64_t k, int64_t group, int asymmetric, uint32_t* words,
                                   uint16_t* params, double* max_rel, double* rms_rel);
GSQ_API gsq_status gsq_w8a16_gemm(void* y, const void* x, const uint8_t* w, const float* scales, const void* bias,
                                  int64_t m, int64_t n, int64_t k, gsq_dtype dtype, gsq_stream stream);
GSQ_API gsq_status gsq_w4a16_gemm(void* y, const void* x, const uint32_t* words, const void* params, const void* bias,
                                  int64_t m, int64_t n, int64_t k, int64_t group, gsq_dtype dtype, gsq_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* GPUSQUEEZE_KERNELS_H */
