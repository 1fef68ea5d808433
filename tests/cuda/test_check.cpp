// The CUDA check family on any machine: the error codes are passed in, so no GPU is needed.
#include "cuda/check.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gsq {
namespace {

cudaError_t fails_with(cudaError_t e) {
  return e;
}

TEST(CudaCheck, AFailedCallThrowsAnInternalErrorNamingTheCallTheErrorAndThePlace) {
  try {
    GSQ_CUDA_CHECK(fails_with(cudaErrorInvalidValue));
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ExitCode::internal);
    EXPECT_NE(what.find("fails_with(cudaErrorInvalidValue) failed"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidValue ("), std::string::npos) << what;
    EXPECT_NE(what.find("test_check.cpp:"), std::string::npos) << what;
  }
}

TEST(CudaCheck, NoDeviceMeansNoGpuNotABug) {
  try {
    GSQ_CUDA_CHECK(fails_with(cudaErrorNoDevice));
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::no_gpu);
    EXPECT_EQ(std::string(e.what()).rfind("no NVIDIA GPU: ", 0), 0u) << e.what();
  }
}

TEST(CudaCheck, DestructorVariantKeepsTheFirstSwallowedErrorAndCountsTheRest) {
  const auto before = cuda::swallowed_errors();
  GSQ_CUDA_CHECK_NOTHROW(fails_with(cudaSuccess));
  EXPECT_EQ(cuda::swallowed_errors().count, before.count);
  GSQ_CUDA_CHECK_NOTHROW(fails_with(cudaErrorIllegalAddress));
  GSQ_CUDA_CHECK_NOTHROW(fails_with(cudaErrorInvalidValue));
  const auto after = cuda::swallowed_errors();
  EXPECT_EQ(after.count, before.count + 2);
  if (before.count == 0) {
    EXPECT_NE(after.first.find("cudaErrorIllegalAddress"), std::string::npos) << after.first;
  }
}

TEST(CublasCheck, AFailedCallNamesCublasStatus) {
  try {
    GSQ_CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gsq
