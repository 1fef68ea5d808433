// The simple versions `gpusqueeze kernels` compares ours against (naive_kernels.cu; in the suites' library, not
// shipped in libgsqkernels): a block per row reading the row once per pass with scalar loads and a shared-memory tree
// reduction; a transpose with one thread per element and no tiling.
#pragma once

#include "kernels/launch.hpp"

namespace gsq::probes {

using kernels::DType;
using kernels::RowArgs;
using kernels::RowOp;

cudaError_t launch_row_naive(RowOp op, DType dtype, const RowArgs& a, cudaStream_t stream);
cudaError_t launch_transpose_naive(DType dtype, void* y, const void* x, int64_t batches, int64_t rows, int64_t cols,
                                   cudaStream_t stream);

}  // namespace gsq::probes
