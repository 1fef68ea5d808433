// NCHW <-> NHWC as a batched transpose y[b][s][r] = x[b][r][s], tiled through shared memory.
//
// A block moves a 64 x 64 tile: it reads 64 rows of 64 consecutive elements (coalesced), and writes 64 columns as rows
// of the output (coalesced). The tile's row pitch is padded by one 32-bit word, so the column-wise reads of the
// second phase fall in 32 different banks for 2- and 4-byte elements alike.
//
// 2-byte elements with rows and columns multiples of 8 move as 16-byte chunks (transpose_vec_kernel); with even rows
// and columns only, as 32-bit pairs: a thread reads the same pair of columns from two adjacent rows, swaps halves (two
// byte permutes) into two pairs of the output's rows, and the tile of 32-bit words is transposed conflict-free; every
// global access is 4 bytes, a warp's 128 bytes contiguous.
#include "kernels/device_common.cuh"

namespace gsq::kernels {

namespace {

constexpr int kTile = 64, kRowsPerPass = 4;  // 64 x 4 threads, each moving 16 elements per phase

template <class T>
__global__ void __launch_bounds__(kTile* kRowsPerPass)
    transpose_kernel(T* __restrict__ y, const T* __restrict__ x, int64_t batches, int64_t rows, int64_t cols,
                     int64_t col_tiles) {
  constexpr int kPad = 4 / sizeof(T);
  __shared__ T tile[kTile][kTile + kPad];
  const int64_t r0 = static_cast<int64_t>(blockIdx.x / col_tiles) * kTile;
  const int64_t s0 = static_cast<int64_t>(blockIdx.x % col_tiles) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t b = blockIdx.y; b < batches; b += gridDim.y) {
    const T* xb = x + b * rows * cols;
    T* yb = y + b * rows * cols;
#pragma unroll
    for (int i = ty; i < kTile; i += kRowsPerPass) {
      const int64_t r = r0 + i, s = s0 + tx;
      if (r < rows && s < cols) tile[i][tx] = xb[r * cols + s];
    }
    __syncthreads();
#pragma unroll
    for (int i = ty; i < kTile; i += kRowsPerPass) {
      const int64_t s = s0 + i, r = r0 + tx;
      if (s < cols && r < rows) yb[s * rows + r] = tile[tx][i];
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(256)
    transpose_pairs_kernel(uint32_t* __restrict__ y, const uint32_t* __restrict__ x, int64_t batches, int64_t rows,
                           int64_t cols, int64_t col_tiles) {
  // Words: a row of `cols` 2-byte elements is cols / 2 words. Tile: 64 rows x 32 words in, 64 rows x 32 words out.
  __shared__ uint32_t lo[32][33], hi[32][33];  // [column pair][row pair]: output row 2c (lo) and 2c + 1 (hi)
  const int64_t r0 = static_cast<int64_t>(blockIdx.x / col_tiles) * 64;
  const int64_t s0 = static_cast<int64_t>(blockIdx.x % col_tiles) * 64;
  const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
  const int64_t in_words = cols / 2, out_words = rows / 2;
  for (int64_t b = blockIdx.y; b < batches; b += gridDim.y) {
    const uint32_t* xb = x + b * rows * in_words;
    uint32_t* yb = y + b * rows * in_words;
#pragma unroll
    for (int i = ty; i < 32; i += 8) {  // row pair i: rows r0 + 2i, r0 + 2i + 1; column pair tx
      const int64_t r = r0 + 2 * i, c = s0 / 2 + tx;
      if (r < rows && c < in_words) {
        const uint32_t a = xb[r * in_words + c], d = xb[(r + 1) * in_words + c];
        lo[tx][i] = __byte_perm(a, d, 0x5410);  // (x[r][2c], x[r+1][2c])
        hi[tx][i] = __byte_perm(a, d, 0x7632);  // (x[r][2c+1], x[r+1][2c+1])
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = ty; i < 32; i += 8) {  // column pair i: output rows s0 + 2i, s0 + 2i + 1; row pair tx
      const int64_t s = s0 + 2 * i, c = r0 / 2 + tx;
      if (s < cols && c < out_words) {
        yb[s * out_words + c] = lo[i][tx];
        yb[(s + 1) * out_words + c] = hi[i][tx];
      }
    }
    __syncthreads();
  }
}

// 2-byte elements, rows and columns multiples of 8, 16-byte aligned: every global access is 16 bytes. A block moves a
// 64 x 64 tile held as 64 rows of 32 words, 16-byte chunk c of row r stored at chunk c ^ (r / 8): a quarter-warp's
// 16-byte stores of one row fill all 32 banks, and in the second phase a lane reads word p of 8 consecutive rows
// (column pair p of an 8-row block), a warp's 32 lanes covering 8 row blocks x 4 column pairs, which the swizzle puts
// in 32 different banks. Two byte permutes per pair of words make a lane's 16-byte chunks of output rows 2p and 2p + 1.
__global__ void __launch_bounds__(256)
    transpose_vec_kernel(uint4* __restrict__ y, const uint4* __restrict__ x, int64_t batches, int64_t rows,
                         int64_t cols, int64_t col_tiles) {
  __shared__ uint4 tile[64][8];  // [row][chunk ^ (row / 8)]
  const int64_t r0 = static_cast<int64_t>(blockIdx.x / col_tiles) * 64;
  const int64_t s0 = static_cast<int64_t>(blockIdx.x % col_tiles) * 64;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rc = lane % 8, p = 4 * warp + lane / 8;  // second phase: row block rc, column pair p
  const int64_t in_chunks = cols / 8, out_chunks = rows / 8;
  for (int64_t b = blockIdx.y; b < batches; b += gridDim.y) {
    const uint4* xb = x + b * rows * in_chunks;
    uint4* yb = y + b * rows * in_chunks;
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int q = tid + 256 * t, row = q / 8, c = q % 8;
      if (r0 + row < rows && s0 / 8 + c < in_chunks) tile[row][c ^ (row / 8)] = xb[(r0 + row) * in_chunks + s0 / 8 + c];
    }
    __syncthreads();
    const auto* words = reinterpret_cast<const uint32_t*>(tile);
    uint32_t a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = words[(8 * rc + j) * 32 + (p ^ (4 * rc))];
    uint4 even, odd;  // output rows s0 + 2p and s0 + 2p + 1, elements r0 + 8 rc … + 7
    even.x = __byte_perm(a[0], a[1], 0x5410), odd.x = __byte_perm(a[0], a[1], 0x7632);
    even.y = __byte_perm(a[2], a[3], 0x5410), odd.y = __byte_perm(a[2], a[3], 0x7632);
    even.z = __byte_perm(a[4], a[5], 0x5410), odd.z = __byte_perm(a[4], a[5], 0x7632);
    even.w = __byte_perm(a[6], a[7], 0x5410), odd.w = __byte_perm(a[6], a[7], 0x7632);
    const int64_t s = s0 + 2 * p, c = r0 / 8 + rc;
    if (s < cols && c < out_chunks) {
      yb[s * out_chunks + c] = even;
      yb[(s + 1) * out_chunks + c] = odd;
    }
    __syncthreads();
  }
}

template <class T>
cudaError_t transpose_typed(void* y, const void* x, int64_t batches, int64_t rows, int64_t cols, cudaStream_t st) {
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(row_tiles * col_tiles),
                  static_cast<unsigned>(std::min<int64_t>(batches, 65535)));
  transpose_kernel<T><<<grid, dim3(kTile, kRowsPerPass), 0, st>>>(static_cast<T*>(y), static_cast<const T*>(x), batches,
                                                                  rows, cols, col_tiles);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_transpose(DType dtype, void* y, const void* x, int64_t batches, int64_t rows, int64_t cols,
                             cudaStream_t st) {
  // The kernels move elements, not values: 2-byte types share one instantiation.
  if (dtype == DType::f32) return transpose_typed<float>(y, x, batches, rows, cols, st);
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(row_tiles * col_tiles),
                  static_cast<unsigned>(std::min<int64_t>(batches, 65535)));
  if (rows % 8 == 0 && cols % 8 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0) {
    transpose_vec_kernel<<<grid, 256, 0, st>>>(static_cast<uint4*>(y), static_cast<const uint4*>(x), batches, rows,
                                               cols, col_tiles);
    return cudaGetLastError();
  }
  if (rows % 2 == 0 && cols % 2 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 4 == 0) {
    transpose_pairs_kernel<<<grid, dim3(32, 8), 0, st>>>(static_cast<uint32_t*>(y), static_cast<const uint32_t*>(x),
                                                         batches, rows, cols, col_tiles);
    return cudaGetLastError();
  }
  return transpose_typed<uint16_t>(y, x, batches, rows, cols, st);
}

}  // namespace gsq::kernels
