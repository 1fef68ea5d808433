// The injected tracer's logic without a GPU: CUPTI record decoding on synthetic records built from cupti.h's layouts
// (SYNTHETIC inputs: the values are chosen for the test, not recorded), API name handling, per-process file names,
// and the bounded queue between traced threads and the writer.
#include "trace/tracer/config.hpp"
#include "trace/tracer/decode.hpp"
#include "trace/tracer/queue.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace gsq::trace::tracer {
namespace {

struct Names {
  std::vector<std::string> table{""};
  uint32_t intern(std::string_view s) {
    for (uint32_t i = 1; i < table.size(); ++i)
      if (table[i] == s) return i;
    table.emplace_back(s);
    return static_cast<uint32_t>(table.size() - 1);
  }
};

// CUPTI hands the tracer records as bytes in its buffers; the test does the same.
template <class T>
std::optional<Record> feed(Decoder& d, const T& rec) {
  static_assert(sizeof(T) <= 1024 && alignof(T) <= 8);
  alignas(8) unsigned char bytes[1024];
  std::memcpy(bytes, &rec, sizeof rec);
  return d.decode(*std::launder(reinterpret_cast<const CUpti_Activity*>(bytes)));
}

class DecodeTest : public ::testing::Test {
 protected:
  Names names;
  std::vector<uint32_t> runtime{0, 0, 0, 0, 0, 7}, driver{0, 0, 9};
  Decoder decoder{[this](std::string_view s) { return names.intern(s); }, runtime, driver};
};

TEST_F(DecodeTest, KernelKeepsGeometryResourcesGraphAndDemangledName) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "_Z6vecAddPfS_i";
  k.start = 1000, k.end = 4000, k.deviceId = 1, k.contextId = 2, k.streamId = 7, k.correlationId = 42;
  k.gridX = 132, k.gridY = 2, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 40, k.staticSharedMemory = 1024, k.dynamicSharedMemory = 4096, k.graphId = 5;
  const auto r = feed(decoder, k);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, static_cast<uint8_t>(RecordKind::kernel));
  EXPECT_EQ(names.table.at(r->name), "vecAdd(float*, float*, int)");
  EXPECT_EQ(r->end_ns - r->start_ns, 3000);
  EXPECT_EQ(r->grid[0], 132);
  EXPECT_EQ(r->grid[1], 2);
  EXPECT_EQ(r->block[0], 256);
  EXPECT_EQ(r->registers, 40);
  EXPECT_EQ(r->static_smem, 1024u);
  EXPECT_EQ(r->dynamic_smem, 4096u);
  EXPECT_EQ(r->graph_id, 5u);
  EXPECT_TRUE(r->flags & kFromGraph);
  EXPECT_EQ(r->stream, 7u);
  EXPECT_EQ(r->correlation, 42u);
  // The same CUPTI name pointer is interned once.
  const auto again = feed(decoder, k);
  EXPECT_EQ(again->name, r->name);
  EXPECT_EQ(names.table.size(), 2u);
}

TEST_F(DecodeTest, CopyKeepsKindsBytesAndAsyncFlag) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC, m.bytes = 1 << 20;
  m.start = 10, m.end = 110;
  const auto r = feed(decoder, m);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, static_cast<uint8_t>(RecordKind::memcpy));
  EXPECT_EQ(copy_kind_name(r->copy_kind), "HtoD");
  EXPECT_EQ(memory_kind_name(r->src_kind), "Pageable");
  EXPECT_EQ(r->bytes, 1u << 20);
  EXPECT_TRUE(r->flags & kAsync);
  EXPECT_FALSE(r->flags & kFromGraph);
}

TEST_F(DecodeTest, RangeStartAndEndBecomeOneRecordAndAnUnmatchedEndNone) {
  CUpti_ActivityMarker2 start{}, end{}, stray{};
  start.kind = end.kind = stray.kind = CUPTI_ACTIVITY_KIND_MARKER;
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START, start.id = 3, start.timestamp = 500, start.name = "forward";
  start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD, start.objectId.pt.threadId = 77;
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END, end.id = 3, end.timestamp = 900;
  stray.flags = CUPTI_ACTIVITY_FLAG_MARKER_END, stray.id = 4, stray.timestamp = 950;
  EXPECT_FALSE(feed(decoder, start));
  const auto r = feed(decoder, end);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, static_cast<uint8_t>(RecordKind::range));
  EXPECT_EQ(names.table.at(r->name), "forward");
  EXPECT_EQ(r->start_ns, 500);
  EXPECT_EQ(r->end_ns, 900);
  EXPECT_EQ(r->tid, 77u);
  EXPECT_FALSE(feed(decoder, stray));
}

TEST_F(DecodeTest, ApiRecordsTakeTheirNameFromTheCallbackTable) {
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  api.cbid = 2, api.start = 1, api.end = 2, api.threadId = 11;
  const auto r = feed(decoder, api);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, 9u);
  EXPECT_TRUE(r->flags & kDriverApi);
  api.cbid = 999;  // beyond the table: no name rather than a read past its end
  EXPECT_EQ(feed(decoder, api)->name, 0u);
}

TEST_F(DecodeTest, OverheadIsSummedNotKeptAndUnknownKindsYieldNothing) {
  CUpti_ActivityOverhead3 o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.start = 100, o.end = 350;
  EXPECT_FALSE(feed(decoder, o));
  EXPECT_FALSE(feed(decoder, o));
  EXPECT_EQ(decoder.overhead_ns(), 500u);
  EXPECT_EQ(decoder.overhead_records(), 2u);
  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  EXPECT_FALSE(feed(decoder, other));
}

TEST(ApiNames, VersionAndPerThreadSuffixesAreDroppedAndOnlyAnalyzedCallsWanted) {
  EXPECT_EQ(clean_api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(clean_api_name("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
  EXPECT_EQ(clean_api_name("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(clean_api_name("cudaGetDevice"), "cudaGetDevice");
  EXPECT_TRUE(wanted_api("cudaStreamSynchronize"));
  EXPECT_TRUE(wanted_api("cuLaunchKernel"));
  EXPECT_FALSE(wanted_api("cudaGetDevice"));
  EXPECT_EQ(demangle(nullptr), "(unknown kernel)");
  EXPECT_EQ(demangle("not_mangled"), "not_mangled");
}

TEST(TraceFileName, OtherProcessesWriteBesideTheLaunchedOnesFileWithPidAndRank) {
  setenv("GSQ_TRACE_ROOT_PID", "100", 1);
  unsetenv("RANK");
  EXPECT_EQ(file_for_process("run.gsqt", 100), "run.gsqt");
  EXPECT_EQ(file_for_process("run.gsqt", 101), "run.pid101.gsqt");
  setenv("RANK", "3", 1);
  EXPECT_EQ(file_for_process("out/run.gsqt", 102), "out/run.pid102.rank3.gsqt");
  unsetenv("RANK");
  unsetenv("GSQ_TRACE_ROOT_PID");
}

TEST(TracerConfig, BufferMegabytesBoundThePoolAndTheCpuQueue) {
  setenv("GSQ_TRACE_BUFFER_MB", "64", 1);
  setenv("GSQ_TRACE_CPU", "activity", 1);
  const Config c = read_config(getpid());
  EXPECT_EQ(c.max_buffers, 8u);  // 64 MiB of 8 MiB buffers
  EXPECT_EQ(c.max_cpu_records, (64u << 20) / sizeof(Record));
  EXPECT_EQ(c.cpu, CpuMode::activity);
  setenv("GSQ_TRACE_BUFFER_MB", "1", 1);  // below the floor of 16 MiB
  EXPECT_EQ(read_config(getpid()).max_buffers, 2u);
  unsetenv("GSQ_TRACE_BUFFER_MB");
  unsetenv("GSQ_TRACE_CPU");
}

TEST(RecordQueue, PoolRefusesPastItsCapAndReusesReturnedBuffers) {
  RecordQueue q(64, 2, 100);
  uint8_t* a = q.take_buffer();
  uint8_t* b = q.take_buffer();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(q.take_buffer(), nullptr);
  EXPECT_EQ(q.buffers_refused(), 1u);
  q.complete_buffer(a, 10);
  auto batch = q.wait_for_work(std::chrono::milliseconds(0));
  ASSERT_EQ(batch.buffers.size(), 1u);
  EXPECT_EQ(batch.buffers.front().valid, 10u);
  q.return_buffer(a);
  q.return_buffer(b);
  EXPECT_EQ(q.take_buffer(), b);  // from the pool, no new allocation
  EXPECT_EQ(q.buffers_allocated(), 2u);
  q.return_buffer(b);
}

TEST(RecordQueue, FullBlocksReachTheWriterUntilTheCapThenAreDroppedAndCounted) {
  RecordQueue q(64, 1, /*max_cpu_records=*/8, /*block_records=*/4);
  Record r;
  for (int i = 0; i < 12; ++i) q.add_cpu_record(r);  // three full blocks; the third passes the cap of 8
  auto batch = q.wait_for_work(std::chrono::milliseconds(0));
  EXPECT_EQ(batch.cpu_blocks.size(), 2u);
  EXPECT_EQ(q.cpu_dropped(), 4u);
  q.add_cpu_record(r);  // a partly filled block stays with its thread until swept
  std::vector<Record> swept;
  q.sweep_thread_blocks(swept);
  EXPECT_EQ(swept.size(), 1u);
}

TEST(RecordQueue, RecordsFromManyThreadsAllArriveAndStopWakesTheWriter) {
  RecordQueue q(64, 1, 1u << 20, 16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&q, t] {
      Record r;
      r.tid = static_cast<uint32_t>(t);
      for (int i = 0; i < 1000; ++i) q.add_cpu_record(r);
    });
  for (auto& t : threads) t.join();
  size_t got = 0;
  for (auto batch = q.wait_for_work(std::chrono::milliseconds(0)); !batch.cpu_blocks.empty();
       batch = q.wait_for_work(std::chrono::milliseconds(0)))
    for (const auto& b : batch.cpu_blocks) got += b.size();
  std::vector<Record> rest;
  q.sweep_thread_blocks(rest);
  EXPECT_EQ(got + rest.size(), 4000u);
  q.stop();
  EXPECT_TRUE(q.wait_for_work(std::chrono::milliseconds(10000)).stopping);
}

}  // namespace
}  // namespace gsq::trace::tracer
