// probe p2p and probe nccl: CUDA events around copy-engine copies and NCCL collectives, medians of trials.
#include "topo/multigpu_probe.hpp"

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/raii.hpp"
#include "topo/nccl_bw.hpp"
#include "topo/p2p_kernels.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace gsq::topo {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
    throw_no_gpu("no CUDA device (cudaGetDeviceCount): probe p2p and probe nccl measure GPUs");
  return n;
}

// Seconds between two events recorded on `s` (the current device's) around what `enqueue` puts there.
template <class Fn>
double event_seconds(cudaStream_t s, Fn&& enqueue) {
  auto start = cuda::Event::create(), stop = cuda::Event::create();
  GSQ_CUDA_CHECK(cudaEventRecord(start.get(), s));
  enqueue();
  GSQ_CUDA_CHECK(cudaEventRecord(stop.get(), s));
  GSQ_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  GSQ_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) / 1e3;
}

// Seconds per `reps` copies src→dst (and dst→src at once when `both`), timed on the source's stream.
double time_copies(int src, int dst, void* a, void* b, uint64_t bytes, int reps, bool both) {
  GSQ_CUDA_CHECK(cudaSetDevice(dst));
  auto s2 = cuda::Stream::create();
  auto go = cuda::Event::create(), done = cuda::Event::create();
  GSQ_CUDA_CHECK(cudaSetDevice(src));
  auto s1 = cuda::Stream::create();
  return event_seconds(s1.get(), [&] {
    if (both) {
      GSQ_CUDA_CHECK(cudaEventRecord(go.get(), s1.get()));
      GSQ_CUDA_CHECK(cudaStreamWaitEvent(s2.get(), go.get(), 0));
    }
    for (int r = 0; r < reps; ++r) {
      GSQ_CUDA_CHECK(cudaMemcpyPeerAsync(b, dst, a, src, bytes, s1.get()));
      if (both) GSQ_CUDA_CHECK(cudaMemcpyPeerAsync(a, src, b, dst, bytes, s2.get()));
    }
    if (both) {
      GSQ_CUDA_CHECK(cudaEventRecord(done.get(), s2.get()));
      GSQ_CUDA_CHECK(cudaStreamWaitEvent(s1.get(), done.get(), 0));
    }
  });
}

// Seconds per `reps` SM copies src→dst: the kernel runs on `src` and stores into `dst`'s memory.
double time_sm_copies(int src, void* a, void* b, uint64_t bytes, int reps, int blocks) {
  GSQ_CUDA_CHECK(cudaSetDevice(src));
  auto s = cuda::Stream::create();
  return event_seconds(s.get(), [&] {
    for (int r = 0; r < reps; ++r) launch_sm_copy(b, a, bytes, blocks, s.get());
  });
}

// One-way latency in µs of a flag store seen by the other side (half a round trip), or nullopt when a side timed
// out (it never saw the other's store). `s` starts, `d` answers; on one GPU two of its SMs play.
std::optional<double> pingpong_us(int s, int d, int rounds) {
  constexpr int kTimeoutMs = 2000;
  struct Side {
    cuda::DeviceBuffer flags, timed_out;
    cuda::Stream stream;
  };
  auto side = [](int dev) {
    GSQ_CUDA_CHECK(cudaSetDevice(dev));
    Side x{cuda::DeviceBuffer::create(256), cuda::DeviceBuffer::create(sizeof(int)), cuda::Stream::create()};
    GSQ_CUDA_CHECK(cudaMemset(x.flags.get(), 0, 256));
    GSQ_CUDA_CHECK(cudaMemset(x.timed_out.get(), 0, sizeof(int)));
    return x;
  };
  Side a = side(s);
  std::optional<Side> b;
  if (d != s) {
    b = side(d);
    GSQ_CUDA_CHECK(cudaSetDevice(d));  // the responder first, so the starter never waits for a launch
    launch_pingpong(b->flags.as<int>(), a.flags.as<int>(), rounds, false, kTimeoutMs, b->timed_out.as<int>(),
                    b->stream.get());
  }
  GSQ_CUDA_CHECK(cudaSetDevice(s));
  const double seconds = event_seconds(a.stream.get(), [&] {
    if (b)
      launch_pingpong(a.flags.as<int>(), b->flags.as<int>(), rounds, true, kTimeoutMs, a.timed_out.as<int>(),
                      a.stream.get());
    else
      launch_pingpong_local(a.flags.as<int>(), rounds, kTimeoutMs, a.timed_out.as<int>(), a.stream.get());
  });
  int late = 0, late_b = 0;
  GSQ_CUDA_CHECK(cudaMemcpy(&late, a.timed_out.get(), sizeof late, cudaMemcpyDeviceToHost));
  if (b) {
    GSQ_CUDA_CHECK(cudaSetDevice(d));
    GSQ_CUDA_CHECK(cudaStreamSynchronize(b->stream.get()));
    GSQ_CUDA_CHECK(cudaMemcpy(&late_b, b->timed_out.get(), sizeof late_b, cudaMemcpyDeviceToHost));
  }
  if (late || late_b) return std::nullopt;
  return seconds * 1e6 / (2.0 * rounds);
}

template <class Fn>
Fn sym(const NcclLibrary& lib, const char* name) {
  void* p = ::dlsym(lib.handle.get(), name);
  if (p == nullptr) throw_no_gpu(fmt::format("{} (NCCL {}) has no {}", lib.path, lib.version_text(), name));
  return reinterpret_cast<Fn>(p);
}

struct Nccl {
  decltype(&ncclCommInitAll) init_all;
  decltype(&ncclCommInitRank) init_rank;
  decltype(&ncclCommDestroy) destroy;
  decltype(&ncclGetErrorString) error;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclReduce) reduce;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  void check(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) throw Error(ExitCode::internal, fmt::format("{} failed: {}", what, error(r)));
  }
};

Nccl bind(const NcclLibrary& lib) {
  return {sym<decltype(&ncclCommInitAll)>(lib, "ncclCommInitAll"),
          sym<decltype(&ncclCommInitRank)>(lib, "ncclCommInitRank"),
          sym<decltype(&ncclCommDestroy)>(lib, "ncclCommDestroy"),
          sym<decltype(&ncclGetErrorString)>(lib, "ncclGetErrorString"),
          sym<decltype(&ncclGroupStart)>(lib, "ncclGroupStart"),
          sym<decltype(&ncclGroupEnd)>(lib, "ncclGroupEnd"),
          sym<decltype(&ncclAllReduce)>(lib, "ncclAllReduce"),
          sym<decltype(&ncclAllGather)>(lib, "ncclAllGather"),
          sym<decltype(&ncclReduceScatter)>(lib, "ncclReduceScatter"),
          sym<decltype(&ncclBroadcast)>(lib, "ncclBroadcast"),
          sym<decltype(&ncclReduce)>(lib, "ncclReduce"),
          sym<decltype(&ncclSend)>(lib, "ncclSend"),
          sym<decltype(&ncclRecv)>(lib, "ncclRecv")};
}

}  // namespace

P2pResult probe_p2p(const P2pOptions& o) {
  P2pResult r;
  r.gpus = device_count();
  const int n = r.gpus;
  r.peer_access.assign(n, std::vector<int>(n, 0));
  r.uni_gbs.assign(n, std::vector<double>(n, 0));
  r.bi_gbs = r.uni_gbs;
  r.latency_us = r.uni_gbs;
  r.sm_uni_gbs = r.uni_gbs;
  r.sm_latency_us = r.uni_gbs;
  std::vector<cuda::DeviceBuffer> buf;
  std::vector<int> blocks;
  const uint64_t sm_bytes = o.bytes / 16 * 16;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    GSQ_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    r.names.emplace_back(p.name);
    blocks.push_back(4 * p.multiProcessorCount);
    GSQ_CUDA_CHECK(cudaSetDevice(d));
    buf.push_back(cuda::DeviceBuffer::create(o.bytes * 2));
    GSQ_CUDA_CHECK(cudaMemset(buf.back().get(), d + 1, o.bytes * 2));
    for (int e = 0; e < n; ++e)
      if (e != d) {
        GSQ_CUDA_CHECK(cudaDeviceCanAccessPeer(&r.peer_access[d][e], d, e));
        if (r.peer_access[d][e]) {
          const auto rc = cudaDeviceEnablePeerAccess(e, 0);
          if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled) GSQ_CUDA_CHECK(rc);
          (void)cudaGetLastError();
        }
      }
  }
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      // On one device the diagonal is an on-device copy between the buffer's halves.
      auto* a = buf[s].as<char>();
      auto* b = s == d ? buf[d].as<char>() + o.bytes : buf[d].as<char>();
      std::vector<double> uni, bi, lat;
      (void)time_copies(s, d, a, b, o.bytes, 1, false);  // warm-up
      for (int t = 0; t < o.trials; ++t) {
        uni.push_back(static_cast<double>(o.bytes) * o.reps / time_copies(s, d, a, b, o.bytes, o.reps, false) / 1e9);
        if (s != d)
          bi.push_back(2.0 * static_cast<double>(o.bytes) * o.reps / time_copies(s, d, a, b, o.bytes, o.reps, true) /
                       1e9);
        lat.push_back(time_copies(s, d, a, b, 4, 100, false) / 100 * 1e6);
      }
      r.uni_gbs[s][d] = median(uni);
      r.bi_gbs[s][d] = median(bi);
      r.latency_us[s][d] = median(lat);
      // The SM side needs the destination mapped into the source's address space (peer access).
      if (s != d && !r.peer_access[s][d]) continue;
      std::vector<double> sm, pp;
      (void)time_sm_copies(s, a, b, sm_bytes, 1, blocks[s]);  // warm-up
      for (int t = 0; t < o.trials; ++t) {
        sm.push_back(static_cast<double>(sm_bytes) * o.reps / time_sm_copies(s, a, b, sm_bytes, o.reps, blocks[s]) /
                     1e9);
        if (s != d && !r.peer_access[d][s]) continue;  // the answer needs the other way mapped too
        if (const auto us = pingpong_us(s, d, o.pingpong_rounds))
          pp.push_back(*us);
        else
          r.notes.push_back(
              fmt::format("GPU {} ↔ {}: the SM ping-pong timed out (a store never became visible to "
                          "the other side within 2 s)",
                          s, d));
      }
      r.sm_uni_gbs[s][d] = median(sm);
      r.sm_latency_us[s][d] = median(pp);
    }
  r.notes.push_back(
      fmt::format("copy engine (cudaMemcpyPeerAsync), {} MiB × {} per trial, median of {} trials; "
                  "GB/s = 1e9 bytes/s; bidirectional counts both directions",
                  o.bytes >> 20, o.reps, o.trials));
  r.notes.push_back(fmt::format(
      "SM copy: a kernel on the source GPU ({} blocks of 512 threads, 4 per SM) storing 16-byte words into the "
      "destination's memory, as NCCL's kernels move data; copy engine and SM figures differ on the same link",
      blocks.empty() ? 0 : blocks[0]));
  r.notes.push_back(fmt::format(
      "latency: a 4-byte copy through the copy engine (enqueue to completion), and an SM ping-pong of flags "
      "(one way = half a round trip, {} round trips; the diagonal: two SMs of one GPU through its L2)",
      o.pingpong_rounds));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d && !r.peer_access[s][d])
        r.notes.push_back(
            fmt::format("GPU {} → {}: no peer access, the driver stages the copy through host memory", s, d));
  if (n == 1)
    r.notes.push_back("one GPU: only the on-device copy (the diagonal) was measured; peer bandwidth needs two or more");
  return r;
}

nlohmann::json to_json(const P2pResult& r) {
  return {{"schema", "gpusqueeze.p2p/1"},
          {"gpus", r.gpus},
          {"names", r.names},
          {"peer_access", r.peer_access},
          {"uni_gbs", r.uni_gbs},
          {"bi_gbs", r.bi_gbs},
          {"latency_us", r.latency_us},
          {"sm_uni_gbs", r.sm_uni_gbs},
          {"sm_latency_us", r.sm_latency_us},
          {"notes", r.notes}};
}

std::string nccl_unique_id(const NcclLibrary& lib) {
  const auto get = sym<decltype(&ncclGetUniqueId)>(lib, "ncclGetUniqueId");
  ncclUniqueId id{};
  if (const auto rc = get(&id); rc != ncclSuccess)
    throw Error(ExitCode::no_gpu, fmt::format("ncclGetUniqueId failed: {}",
                                              sym<decltype(&ncclGetErrorString)>(lib, "ncclGetErrorString")(rc)));
  std::string hex;
  for (char c : id.internal) hex += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return hex;
}

namespace {

ncclUniqueId unique_id_of(const std::string& hex) {
  ncclUniqueId id{};
  if (hex.size() != 2 * sizeof id.internal || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw_bad_input(fmt::format("--nccl-id: expected {} hex digits (ncclGetUniqueId), got {} characters",
                                2 * sizeof id.internal, hex.size()));
  for (size_t i = 0; i < sizeof id.internal; ++i)
    id.internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return id;
}

}  // namespace

NcclRun probe_nccl(const NcclLibrary& lib, const NcclOptions& o, const std::optional<NcclRank>& rank) {
  const Nccl nc = bind(lib);
  NcclRun run;
  run.library = lib.path + " (" + lib.origin + ")";
  run.version = lib.version_text();
  // This process's ranks: every GPU here (one process), or its own (one of several processes).
  std::vector<int> devs;
  int n = 0, base = 0;
  std::vector<ncclComm_t> comms;
  if (rank) {
    if (rank->nranks < 1 || rank->rank < 0 || rank->rank >= rank->nranks)
      throw_bad_input(fmt::format("probe nccl: rank {} of {}", rank->rank, rank->nranks));
    const ncclUniqueId id = unique_id_of(rank->unique_id);
    if (rank->device < 0 || rank->device >= device_count())
      throw_bad_input(
          fmt::format("probe nccl: --rank-device {}: this machine has {} GPU(s)", rank->device, device_count()));
    devs = {rank->device};
    n = rank->nranks;
    base = rank->rank;
    comms.resize(1);
    GSQ_CUDA_CHECK(cudaSetDevice(rank->device));
    nc.check(nc.init_rank(&comms[0], n, id, rank->rank), "ncclCommInitRank");
  } else {
    n = device_count();
    for (int d = 0; d < n; ++d) devs.push_back(d);
    comms.resize(static_cast<size_t>(n));
    nc.check(nc.init_all(comms.data(), n, devs.data()), "ncclCommInitAll");
  }
  const int local = static_cast<int>(devs.size());
  run.ranks = n;
  std::vector<cuda::Stream> streams;
  std::vector<cuda::DeviceBuffer> send, recv;
  const uint64_t cap = std::max<uint64_t>(o.max_bytes, 8);
  for (int d : devs) {
    GSQ_CUDA_CHECK(cudaSetDevice(d));
    streams.push_back(cuda::Stream::create());
    send.push_back(cuda::DeviceBuffer::create(cap));
    recv.push_back(cuda::DeviceBuffer::create(cap));
  }
  // One launch of `coll` on every rank at `bytes` (nccl-tests' size column), uint8 data, sum.
  auto launch = [&](const std::string& coll, uint64_t bytes) {
    const size_t per = bytes / static_cast<uint64_t>(n);
    nc.check(nc.group_start(), "ncclGroupStart");
    for (int r = 0; r < local; ++r) {
      const int g = base + r;  // the global rank
      void* s = send[r].get();
      void* d = recv[r].get();
      cudaStream_t st = streams[r].get();
      ncclResult_t rc = ncclSuccess;
      if (coll == "all_reduce")
        rc = nc.all_reduce(s, d, bytes, ncclUint8, ncclSum, comms[r], st);
      else if (coll == "all_gather")
        rc = nc.all_gather(s, d, per, ncclUint8, comms[r], st);
      else if (coll == "reduce_scatter")
        rc = nc.reduce_scatter(s, d, per, ncclUint8, ncclSum, comms[r], st);
      else if (coll == "broadcast")
        rc = nc.broadcast(s, d, bytes, ncclUint8, 0, comms[r], st);
      else if (coll == "reduce")
        rc = nc.reduce(s, d, bytes, ncclUint8, ncclSum, 0, comms[r], st);
      else if (coll == "alltoall") {
        for (int p = 0; p < n && rc == ncclSuccess; ++p) {
          rc = nc.send(static_cast<char*>(s) + p * per, per, ncclUint8, p, comms[r], st);
          if (rc == ncclSuccess) rc = nc.recv(static_cast<char*>(d) + p * per, per, ncclUint8, p, comms[r], st);
        }
      } else if (coll == "sendrecv") {
        rc = nc.send(s, bytes, ncclUint8, (g + 1) % n, comms[r], st);
        if (rc == ncclSuccess) rc = nc.recv(d, bytes, ncclUint8, (g + n - 1) % n, comms[r], st);
      }
      nc.check(rc, coll.c_str());
    }
    nc.check(nc.group_end(), "ncclGroupEnd");
  };
  for (const auto& coll : o.collectives) {
    if (!bus_factor(coll, n))
      throw_bad_input(
          fmt::format("probe nccl: unknown collective '{}' (all_reduce, all_gather, reduce_scatter, "
                      "broadcast, reduce, alltoall, sendrecv)",
                      coll));
    for (uint64_t bytes = std::max<uint64_t>(o.min_bytes, static_cast<uint64_t>(n)); bytes <= o.max_bytes; bytes *= 2) {
      for (int r = 0; r < local; ++r) {  // rank g sends bytes of value g + 1; the results are checked below
        GSQ_CUDA_CHECK(cudaSetDevice(devs[r]));
        GSQ_CUDA_CHECK(cudaMemsetAsync(send[r].get(), base + r + 1, bytes, streams[r].get()));
        GSQ_CUDA_CHECK(cudaMemsetAsync(recv[r].get(), 0, bytes, streams[r].get()));
      }
      launch(coll, bytes);
      int64_t wrong = 0;
      if (coll == "all_reduce") {  // every byte: the sum of 1..n, mod 256
        unsigned char got[64] = {};
        const auto expect = static_cast<unsigned char>(n * (n + 1) / 2);
        for (int r = 0; r < local; ++r) {
          GSQ_CUDA_CHECK(cudaSetDevice(devs[r]));
          GSQ_CUDA_CHECK(cudaStreamSynchronize(streams[r].get()));
          const size_t k = std::min<uint64_t>(sizeof got, bytes);
          GSQ_CUDA_CHECK(cudaMemcpy(got, recv[r].as<char>() + (bytes - k), k, cudaMemcpyDeviceToHost));
          for (size_t i = 0; i < k; ++i) wrong += got[i] != expect;
        }
      }
      for (int w = 0; w < o.warmup; ++w) launch(coll, bytes);
      GSQ_CUDA_CHECK(cudaSetDevice(devs[0]));
      auto start = cuda::Event::create(), stop = cuda::Event::create();
      auto sync_all = [&] {
        for (int r = 0; r < local; ++r) {
          GSQ_CUDA_CHECK(cudaSetDevice(devs[r]));
          GSQ_CUDA_CHECK(cudaStreamSynchronize(streams[r].get()));
        }
        GSQ_CUDA_CHECK(cudaSetDevice(devs[0]));
      };
      sync_all();
      GSQ_CUDA_CHECK(cudaEventRecord(start.get(), streams[0].get()));
      for (int i = 0; i < o.iters; ++i) launch(coll, bytes);
      GSQ_CUDA_CHECK(cudaSetDevice(devs[0]));
      GSQ_CUDA_CHECK(cudaEventRecord(stop.get(), streams[0].get()));
      sync_all();
      float ms = 0;
      GSQ_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      const double t = static_cast<double>(ms) / 1e3 / o.iters;
      const auto bw = bandwidth(coll, static_cast<double>(bytes), t, n);
      run.rows.push_back({coll, bytes, t * 1e6, bw.algbw_gbs, bw.busbw_gbs, wrong, {}, {}, 0});
    }
  }
  for (auto c : comms) (void)nc.destroy(c);
  run.notes.push_back(
      rank ? fmt::format(
                 "rank {} of {} processes (one GPU each, like nccl-tests under mpirun), on GPU {}; uint8 sum, {} "
                 "warm-up and {} timed iterations; busbw is nccl-tests' flat-algorithm equivalent",
                 rank->rank, n, rank->device, o.warmup, o.iters)
           : fmt::format("one process driving {} GPU(s) (like nccl-tests -g {}), uint8 sum, {} warm-up and {} "
                         "timed iterations; busbw is nccl-tests' flat-algorithm equivalent (NVLS, Tree and "
                         "CollNet can exceed the link rate)",
                         n, n, o.warmup, o.iters));
  if (n == 1)
    run.notes.push_back(
        "one GPU: every collective is a local copy and busbw is 0 by its definition (2(n-1)/n); bus "
        "bandwidth needs two or more GPUs");
  return run;
}

nlohmann::json to_json(const NcclRun& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows)
    rows.push_back({{"collective", x.collective},
                    {"bytes", x.bytes},
                    {"time_us", x.time_us},
                    {"algbw_gbs", x.algbw_gbs},
                    {"busbw_gbs", x.busbw_gbs},
                    {"wrong", x.wrong},
                    {"algo", x.algo},
                    {"proto", x.proto},
                    {"channels", x.channels}});
  return {{"schema", "gpusqueeze.nccl-probe/1"},
          {"library", r.library},
          {"version", r.version},
          {"ranks", r.ranks},
          {"rows", rows},
          {"notes", r.notes}};
}

}  // namespace gsq::topo
