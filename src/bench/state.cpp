// The timing protocol: warmup, cold samples behind a blocking kernel with L2 flushed, batch samples, stopping rule.
#include "bench/benchmark.hpp"

#include "bench/device_kernels.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "cuda/raii.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>

namespace gsq::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

float elapsed_ms(const cuda::Event& a, const cuda::Event& b) {
  float ms = 0;
  GSQ_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return ms;
}

// Stopping rule: checked every 8 samples once min_samples and min_seconds (of the configuration's own time) are in.
bool converged(const std::vector<double>& samples, const Settings& s, double seconds) {
  if (samples.size() < s.min_samples || samples.size() % 8 != 0 || seconds < s.min_seconds) return false;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double med = stats::percentile_sorted(sorted, 0.5);
  return stats::median_ci_order_stats(sorted).rel_half_width(med) <= s.target_rel_ci;
}

}  // namespace

std::vector<double> Measurement::kept() const {
  if (!throttled_dropped) return samples_ns;
  std::vector<double> out;
  for (size_t i = 0; i < samples_ns.size(); ++i)
    if (i >= throttled.size() || !throttled[i]) out.push_back(samples_ns[i]);
  return out;
}

State::State(const Settings& settings, std::map<std::string, std::string> axes, cudaStream_t stream, int device,
             std::function<void(uint32_t&, uint8_t&)> clock_probe, void* l2_flush_buffer, size_t l2_flush_bytes,
             Peaks peaks)
    : settings_(settings),
      stream_(stream),
      device_(device),
      clock_probe_(std::move(clock_probe)),
      l2_flush_(l2_flush_buffer),
      l2_flush_bytes_(l2_flush_bytes),
      peaks_(peaks) {
  result_.axes = std::move(axes);
}

const std::string& State::axis(const std::string& name) const {
  const auto it = result_.axes.find(name);
  if (it == result_.axes.end()) throw_bad_input(fmt::format("benchmark {} has no axis '{}'", result_.name, name));
  return it->second;
}

std::optional<int64_t> parse_size(std::string_view v) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || n < 0) return std::nullopt;
  const std::string_view suffix(end, static_cast<size_t>(v.data() + v.size() - end));
  if (suffix.empty()) return n;
  if (suffix == "Ki") return n << 10;
  if (suffix == "Mi") return n << 20;
  if (suffix == "Gi") return n << 30;
  return std::nullopt;
}

int64_t State::axis_int(const std::string& name) const {
  const std::string& v = axis(name);
  if (const auto n = parse_size(v)) return *n;
  throw_bad_input(
      fmt::format("axis {}={} is not a non-negative integer with an optional Ki, Mi or Gi suffix", name, v));
}

void State::warmup(const std::function<void(cudaStream_t)>& launch) {
  const auto start = Clock::now();
  for (uint32_t i = 0; i < settings_.warmup_launches || seconds_since(start) < settings_.warmup_seconds; ++i) {
    launch(stream_);
    if (i % 64 == 63) GSQ_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (i > 1000000) break;
  }
  GSQ_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void State::apply_throttle_rule(Measurement& m) const {
  // Rule: a sample is throttled when NVML reported a slowdown reason (power cap, thermal, HW slowdown, power brake) at
  // its end, or its SM clock is below 95% of the highest clock seen in the run. Flagged samples are left out of the
  // statistics unless more than half are flagged (then the clocks are the state of the machine, and all are kept).
  if (m.sm_clock_mhz.empty()) return;
  const uint32_t top = *std::max_element(m.sm_clock_mhz.begin(), m.sm_clock_mhz.end());
  size_t flagged = 0;
  for (size_t i = 0; i < m.sm_clock_mhz.size(); ++i) {
    if (m.sm_clock_mhz[i] < settings_.throttle_clock_ratio * top) m.throttled[i] = 1;
    flagged += m.throttled[i];
  }
  m.throttled_dropped = !settings_.keep_throttled && flagged > 0 && flagged * 2 <= m.samples_ns.size();
}

namespace {

// The blocking kernel's host-mapped flag: arm() queues a kernel that spins until release() (or 1 s passes).
class BlockingFlag {
 public:
  BlockingFlag() : buf_(cuda::PinnedBuffer::create(sizeof(int), cudaHostAllocMapped)), host_(buf_.as<int>()) {
    GSQ_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_), buf_.get(), 0));
  }
  void arm(cudaStream_t s) {
    *host_ = 0;
    launch_blocking_kernel(dev_, s);
  }
  void release() { *host_ = 1; }

 private:
  cuda::PinnedBuffer buf_;
  volatile int* host_;
  int* dev_ = nullptr;
};

}  // namespace

void State::sample_until_stop(Measurement& m, const std::function<Sample()>& take) {
  const auto t0 = Clock::now();
  double gpu_s = 0, waited_s = 0;
  for (;;) {
    const Sample s = take();
    m.samples_ns.push_back(s.ns_per_launch);
    gpu_s += s.gpu_s;
    if (s.sm_clock_mhz != 0) m.sm_clock_mhz.push_back(s.sm_clock_mhz);
    m.throttled.push_back(s.slowdown);
    if (between_samples_) waited_s += between_samples_();
    const double own_s = seconds_since(t0) - waited_s;
    if (converged(m.samples_ns, settings_, own_s)) {
      m.stop_reason = "converged";
      break;
    }
    if (m.samples_ns.size() >= settings_.max_samples) {
      m.stop_reason = "sample limit";
      break;
    }
    if (own_s >= settings_.max_seconds && m.samples_ns.size() >= std::min<uint32_t>(settings_.min_samples, 5)) {
      m.stop_reason = "time limit";
      break;
    }
  }
  m.wall_s = seconds_since(t0) - waited_s;
  m.overhead_ns_per_sample = (m.wall_s - gpu_s) * 1e9 / static_cast<double>(m.samples_ns.size());
  if (m.sm_clock_mhz.size() != m.samples_ns.size()) m.sm_clock_mhz.clear();
  apply_throttle_rule(m);
}

Measurement State::measure_cold(const std::function<void(cudaStream_t)>& launch) {
  Measurement m;
  m.mode = "cold";
  cuda::Event start = cuda::Event::create(), stop = cuda::Event::create();
  BlockingFlag flag;
  sample_until_stop(m, [&] {
    if (l2_flush_ != nullptr) launch_l2_flush(l2_flush_, l2_flush_bytes_, stream_);
    // The launch is queued behind a kernel that spins on a host flag, so its CPU launch cost is not timed.
    if (blockable_) flag.arm(stream_);
    GSQ_CUDA_CHECK(cudaEventRecord(start.get(), stream_));
    launch(stream_);
    GSQ_CUDA_CHECK(cudaEventRecord(stop.get(), stream_));
    // Read the clock while the GPU is busy spinning, just before the timed work starts; after the sample it would idle.
    Sample s;
    clock_probe_(s.sm_clock_mhz, s.slowdown);
    flag.release();
    GSQ_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    s.ns_per_launch = elapsed_ms(start, stop) * 1e6;
    s.gpu_s = s.ns_per_launch * 1e-9;
    return s;
  });
  return m;
}

Measurement State::measure_batch(const std::function<void(cudaStream_t)>& launch, bool blocked) {
  Measurement m;
  m.mode = blocked ? "batch" : "host";
  cuda::Event start = cuda::Event::create(), stop = cuda::Event::create();
  BlockingFlag flag;
  // Size the batch from one timed launch so that each sample lasts about batch_target_ms.
  GSQ_CUDA_CHECK(cudaEventRecord(start.get(), stream_));
  for (int i = 0; i < 8; ++i) launch(stream_);
  GSQ_CUDA_CHECK(cudaEventRecord(stop.get(), stream_));
  GSQ_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  const double one_ms = std::max(1e-4, elapsed_ms(start, stop) / 8.0);
  // Behind the blocking kernel the launch queue must hold the whole batch (about a thousand entries, and a library call
  // may be several kernels), else the host would block in a launch until the blocking kernel times out.
  m.launches_per_sample =
      static_cast<uint32_t>(std::clamp(settings_.batch_target_ms / one_ms, 1.0, blocked ? 256.0 : 10000.0));
  sample_until_stop(m, [&] {
    if (blocked && blockable_) flag.arm(stream_);
    GSQ_CUDA_CHECK(cudaEventRecord(start.get(), stream_));
    for (uint32_t k = 0; k < m.launches_per_sample; ++k) launch(stream_);
    GSQ_CUDA_CHECK(cudaEventRecord(stop.get(), stream_));
    Sample s;
    clock_probe_(s.sm_clock_mhz, s.slowdown);  // while the GPU is busy: blocked, or running the batch
    flag.release();
    GSQ_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    const double batch_ms = elapsed_ms(start, stop);
    s.gpu_s = batch_ms * 1e-3;
    s.ns_per_launch = batch_ms * 1e6 / m.launches_per_sample;
    return s;
  });
  return m;
}

Measurement State::measure_first_calls(const std::function<void(cudaStream_t)>& launch) {
  // The warmup set: the first calls, untouched by any warmup, one sample each (module load, first-touch, clock ramp).
  Measurement m;
  m.mode = "first_calls";
  cuda::Event start = cuda::Event::create(), stop = cuda::Event::create();
  const auto t0 = Clock::now();
  double waited_s = 0;
  for (int i = 0; i < 10; ++i) {
    GSQ_CUDA_CHECK(cudaEventRecord(start.get(), stream_));
    launch(stream_);
    GSQ_CUDA_CHECK(cudaEventRecord(stop.get(), stream_));
    GSQ_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    m.samples_ns.push_back(elapsed_ms(start, stop) * 1e6);
    m.throttled.push_back(0);
    if (between_samples_) waited_s += between_samples_();
  }
  m.stop_reason = "fixed count";
  m.wall_s = seconds_since(t0) - waited_s;
  return m;
}

void State::exec(const std::function<void(cudaStream_t)>& launch) {
  if (!result_.skipped.empty()) return;
  if (settings_.first_calls) result_.measurements.push_back(measure_first_calls(launch));
  warmup(launch);
  if (settings_.cold && !warm_only_) result_.measurements.push_back(measure_cold(launch));
  if (settings_.batch) result_.measurements.push_back(measure_batch(launch, true));
  if (settings_.host || host_paced_) result_.measurements.push_back(measure_batch(launch, false));
}

}  // namespace gsq::bench
