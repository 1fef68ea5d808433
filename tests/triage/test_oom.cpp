// Pasted CUDA out-of-memory errors (triage/oom.hpp). The messages below are written for these tests in PyTorch's two
// wordings (c10/cuda/CUDACachingAllocator.cpp), their figures chosen to sit on each side of a judgement; the real ones,
// labelled from their threads, are the OOM corpus (tests/data/oom/, CTest oom_corpus).
#include "triage/oom.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string_view>

namespace gsq::triage {
namespace {

constexpr double kGiB = 1ull << 30;

std::string first_cause(const OomReport& r) {
  return r.findings.empty() ? "" : r.findings.front().id;
}

bool offers(const OomReport& r, std::string_view cause) {
  return std::any_of(r.findings.begin(), r.findings.end(), [&](const auto& f) { return f.id == cause; });
}

TEST(Oom, TheOldWordingIsReadWithItsUnits) {
  const auto r = read_oom_text(
      "RuntimeError: CUDA out of memory. Tried to allocate 512.00 KiB (GPU 3; 23.69 GiB total capacity; 21.00 GiB "
      "already allocated; 0 bytes free; 21.50 GiB reserved in total by PyTorch)\n",
      "t");
  ASSERT_EQ(r.messages.size(), 1u);
  const auto& m = r.messages[0];
  EXPECT_EQ(m.wording, "before-2.1");
  EXPECT_EQ(m.gpu, 3);
  EXPECT_DOUBLE_EQ(m.tried, 512.0 * 1024);
  EXPECT_DOUBLE_EQ(*m.free, 0);
  EXPECT_NEAR(*m.reserved_unallocated, 0.5 * kGiB, 1e3);
  EXPECT_NEAR(*m.outside_pytorch(), (23.69 - 21.50) * kGiB, 1e6);
  EXPECT_EQ(m.line, 1u);
}

TEST(Oom, TheNewWordingIsReadAcrossWrappedLinesWithItsProcesses) {
  const auto r = read_oom_text(
      "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity\n"
      "of 79.10 GiB of which 1.00 GiB is free. Process 111 has 40.00 GiB memory in use. Process 222 has 38.00 GiB\n"
      "memory in use. Including non-PyTorch memory, this process has 38.00 GiB memory in use. Of the allocated memory\n"
      "36.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.\n",
      "t");
  ASSERT_EQ(r.messages.size(), 1u);
  const auto& m = r.messages[0];
  EXPECT_EQ(m.wording, "2.1+");
  EXPECT_EQ(m.gpu, 1);
  ASSERT_EQ(m.processes.size(), 2u);
  EXPECT_DOUBLE_EQ(*m.reserved, 37.0 * kGiB);
  // Another process holds 40 GiB: without it the 2 GiB would fit.
  EXPECT_EQ(first_cause(r), "oom-other-process");
}

// PyTorch 2.1.0's wording has "total capacty" (sic), as the OOM corpus's returnn1469 prints it.
TEST(Oom, PyTorch210sMisspelledCapacityIsRead) {
  const auto r = read_oom_text(
      "OutOfMemoryError: CUDA out of memory. Tried to allocate 52.00 MiB. GPU 0 has a total capacty of 31.74 GiB of "
      "which 39.62 MiB is free. Process 1 has 1.19 GiB memory in use. Process 2 has 30.00 GiB memory in use. Of the "
      "allocated memory 29.00 GiB is allocated by PyTorch, and 0.50 GiB is reserved by PyTorch but unallocated.",
      "t");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].wording, "2.1+");
  EXPECT_EQ(r.messages[0].gpu, 0);
  ASSERT_TRUE(r.messages[0].capacity.has_value());
  EXPECT_NEAR(*r.messages[0].capacity, 31.74 * kGiB, 1e6);
}

// The cudaMallocAsync backend's wording, a figure per line (the OOM corpus's comfyui3278, as printed): read, its
// memory outside PyTorch said as a contributing cause where it would have held the request.
TEST(Oom, TheAsyncAllocatorsWordingIsRead) {
  const auto r = read_oom_text(
      "torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
      "Currently allocated     : 21.55 GiB\n"
      "Requested               : 952.00 MiB\n"
      "Device limit            : 24.00 GiB\n"
      "Free (according to CUDA): 0 bytes\n"
      "PyTorch limit (set by user-supplied memory fraction)\n"
      "                        : 17179869184.00 GiB\n",
      "t");
  ASSERT_EQ(r.messages.size(), 1u);
  const auto& m = r.messages[0];
  EXPECT_EQ(m.wording, "cudaMallocAsync");
  EXPECT_EQ(m.gpu, 0);
  EXPECT_DOUBLE_EQ(m.tried, 952.0 * 1024 * 1024);
  EXPECT_NEAR(*m.capacity, 24.0 * kGiB, 1);
  EXPECT_DOUBLE_EQ(*m.free, 0);
  EXPECT_NEAR(*m.outside_pytorch(), 2.45 * kGiB, 1e6);
  EXPECT_EQ(r.bare, 0u);
  EXPECT_EQ(first_cause(r), "oom-too-large");
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[1].id, "oom-other-process");
  EXPECT_EQ(r.findings[1].severity, Severity::warn);
}

TEST(Oom, FreeBytesInTheCacheThatWouldHoldTheRequestAreFragmentation) {
  const auto r = read_oom_text(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.10 "
      "GiB of which 2.00 GiB is free. Including non-PyTorch memory, this process has 77.00 GiB memory in use. Of the "
      "allocated memory 60.00 GiB is allocated by PyTorch, and 16.00 GiB is reserved by PyTorch but unallocated.",
      "t");
  EXPECT_EQ(first_cause(r), "oom-fragmentation");
}

TEST(Oom, TensorsFillingTheGpuAreAWorkloadThatDoesNotFit) {
  const auto r = read_oom_text(
      "RuntimeError: CUDA out of memory. Tried to allocate 6.00 GiB (GPU 0; 39.59 GiB total capacity; 36.00 GiB "
      "already allocated; 2.10 GiB free; 36.30 GiB reserved in total by PyTorch)",
      "t");
  EXPECT_EQ(first_cause(r), "oom-too-large");
}

// The driver's count for this process holds at least what PyTorch reserved; "0 bytes" (NVML blind to the process: WSL,
// a container, as the OOM corpus's regionalflux13 prints it) says nothing of it, and the full GPU is this process's
// tensors, not another process's.
TEST(Oom, AProcessCountUnderWhatPyTorchReservedIsNotAnotherProcesssMemory) {
  const auto r = read_oom_text(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacity of 23.43 "
      "GiB of which 4.06 MiB is free. Including non-PyTorch memory, this process has 0 bytes memory in use. Of the "
      "allocated memory 23.03 GiB is allocated by PyTorch, and 15.67 MiB is reserved by PyTorch but unallocated.",
      "t");
  EXPECT_EQ(first_cause(r), "oom-too-large");
  EXPECT_FALSE(offers(r, "oom-other-process"));
}

// Figures a paste lost: a message cut after "Tried to allocate" (the OOM corpus's qwen3_458) says so instead of
// "0.00 GiB of the GPU's 0.00 GiB"; a space lost where a wrapped line was rejoined ("capacityof", latentsync278) still
// reads the figures. A request larger than the GPU is the workload, never fragmentation (viewcrafter78: 39.55 GiB asked
// of a 19.99 GiB card beside 39.76 GiB "reserved but unallocated").
TEST(Oom, WhatAPasteLostOrGluedIsReadForWhatItStillSays) {
  const auto cut = read_oom_text("OutOfMemoryError: CUDA out of memory. Tried to allocate 642.00 MiB. GPU\n", "t");
  ASSERT_FALSE(cut.findings.empty());
  EXPECT_NE(cut.findings[0].title.find("stops before the GPU's figures"), std::string::npos) << cut.findings[0].title;
  EXPECT_EQ(cut.findings[0].title.find("0.00 GiB"), std::string::npos) << cut.findings[0].title;
  const auto glued = read_oom_text(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB. GPU 0 has a total capacityof 23.64 "
      "GiB of which 983.69 MiB is free. Of the allocated memory 20.50 GiB is allocated by PyTorch, and 1.36 GiB is "
      "reserved by PyTorch but unallocated.",
      "t");
  ASSERT_EQ(glued.messages.size(), 1u);
  ASSERT_TRUE(glued.messages[0].capacity.has_value());
  EXPECT_NEAR(*glued.messages[0].capacity, 23.64 * kGiB, 0.01 * kGiB);
  const auto beyond = read_oom_text(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 39.55 GiB. GPU 0 has a total capacity of 19.99 "
      "GiB of which 0 bytes is free. Of the allocated memory 33.42 GiB is allocated by PyTorch, and 39.76 GiB is "
      "reserved by PyTorch but unallocated.",
      "t");
  EXPECT_EQ(first_cause(beyond), "oom-too-large");
  EXPECT_FALSE(offers(beyond, "oom-fragmentation"));
}

TEST(Oom, RanksRepeatingOneMessageMakeOneFindingThatCountsThem) {
  const std::string one =
      "RuntimeError: CUDA out of memory. Tried to allocate 6.00 GiB (GPU 0; 39.59 GiB total capacity; 36.00 GiB "
      "already allocated; 2.10 GiB free; 36.30 GiB reserved in total by PyTorch)\n";
  const auto r = read_oom_text(one + one + one, "t");
  EXPECT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].evidence.back().name, "messages");
  EXPECT_EQ(r.findings[0].evidence.back().value, "3");
}

TEST(Oom, OutOfMemoryWithoutTheAllocatorsFiguresIsStillAFailure) {
  const auto r =
      read_oom_text("RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously\n", "t");
  EXPECT_TRUE(r.messages.empty());
  EXPECT_EQ(first_cause(r), "oom-outside-allocator");
  EXPECT_EQ(r.findings[0].severity, Severity::fail);
}

// vLLM's own memory failures (OOM batch J, first pass 0/5 with three refused): its start-up check names what is free
// before the engine loads anything, so what is not free is another's; a bare OOM is judged by where it struck (the
// sleep-mode allocator's wake_up: a colocated trainer took the GPU; CUDA graph capture: the process's own budget).
TEST(Oom, VllmsStartupCheckAndBareOomsAreJudgedByWhereTheyStruck) {
  const auto startup = read_oom_text(
      "(Worker pid=7) ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU "
      "memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
      "processes.\n",
      "t");
  ASSERT_EQ(startup.messages.size(), 1u);
  EXPECT_EQ(startup.messages[0].wording, "vllm-startup");
  EXPECT_EQ(startup.messages[0].gpu, 1);
  EXPECT_NEAR(startup.messages[0].tried, 19.84 * kGiB, 0.01 * kGiB);
  EXPECT_EQ(first_cause(startup), "oom-other-process");
  EXPECT_NE(startup.findings[0].fix.find("at most 0.86"), std::string::npos) << startup.findings[0].fix;
  const auto wake = read_oom_text(
      "  File \"/x/vllm/device_allocator/cumem.py\", line 207, in wake_up\nRuntimeError: CUDA Error: out of memory at "
      "/workspace/csrc/cumem_allocator.cpp:62\n",
      "t");
  EXPECT_EQ(first_cause(wake), "oom-other-process");
  const auto graph = read_oom_text("    self.cuda_graph.capture_end()\nRuntimeError: CUDA error: out of memory\n", "t");
  EXPECT_EQ(first_cause(graph), "oom-too-large");
  const auto blocks = read_oom_text(
      "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
      "initializing the engine.\n",
      "t");
  EXPECT_EQ(first_cause(blocks), "oom-too-large");
  EXPECT_EQ(blocks.findings[0].severity, Severity::fail);
}

// Other allocators' wordings (OOM batch M, first pass 1/4 with two refused): XLA's, with the program's buffers from its
// BufferAssignment dump, and TensorRT's builder.
TEST(Oom, XlasAndTensorRtsOutOfMemoryAreRead) {
  const auto xla = read_oom_text(
      "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4770354232 "
      "bytes.\nBufferAssignment stats:\n                 total allocation:   14.44GiB\n",
      "t");
  ASSERT_EQ(xla.messages.size(), 1u);
  EXPECT_EQ(xla.messages[0].wording, "xla");
  EXPECT_DOUBLE_EQ(xla.messages[0].tried, 4770354232.0);
  ASSERT_TRUE(xla.messages[0].allocated.has_value());
  EXPECT_NEAR(*xla.messages[0].allocated, 14.44 * kGiB, 0.01 * kGiB);
  EXPECT_EQ(first_cause(xla), "oom-too-large");
  const auto trt = read_oom_text(
      "[TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further "
      "information)\n",
      "t");
  EXPECT_EQ(first_cause(trt), "oom-too-large");
  EXPECT_NE(trt.findings[0].title.find("TensorRT"), std::string::npos);
}

TEST(Oom, TextWithoutAnOomIsRefused) {
  EXPECT_FALSE(looks_like_oom_text("loss 0.31 step 10\n"));
  EXPECT_THROW((void)read_oom_text("loss 0.31 step 10\n", "t"), Error);
  // Truncated inside the figures: the request is read, the rest absent, nothing invented.
  const auto r = read_oom_text("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total cap", "t");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_FALSE(r.messages[0].free.has_value());
  EXPECT_FALSE(r.messages[0].outside_pytorch().has_value());
}

}  // namespace
}  // namespace gsq::triage
