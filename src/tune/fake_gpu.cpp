// The fake GPUs of `tune`'s tests (SYNTHETIC values): setters change what getters return, errors are injected per call,
// and a state file lets several processes share one fake machine (GSQ_TUNE_FAKE_GPU).
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "tune/gpu_control.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace gsq::tune {

namespace {

const char* domain_name(ClockDomain d) {
  return d == ClockDomain::graphics ? "graphics" : "memory";
}

}  // namespace

FakeGpuControl::FakeGpuControl(unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    Gpu g;
    g.id = {"NVIDIA H200 (fake)", fmt::format("GPU-fake-{:04}", i), fmt::format("00000000:{:02X}:00.0", 0x18 + i)};
    for (unsigned mhz = 1980; mhz >= 345; mhz -= 15) g.graphics_clocks.push_back(mhz);
    g.memory_clocks = {3201};
    gpus.push_back(std::move(g));
  }
}

std::unique_ptr<FakeGpuControl> FakeGpuControl::from_file(const std::filesystem::path& file, unsigned n) {
  auto fake = std::make_unique<FakeGpuControl>(n);
  fake->file_ = file;
  if (!std::filesystem::exists(file)) {
    fake->save();
    return fake;
  }
  const auto j = read_json_file(file, "gpusqueeze.fake-gpu/1");
  fake->gpus.clear();
  try {
    fake->cuda_driver = j.value("cuda_driver", fake->cuda_driver);
    for (const auto& g : j.at("gpus")) {
      Gpu x;
      x.id = {g.at("name"), g.at("uuid"), g.at("bus_id")};
      x.persistence = g.at("persistence");
      x.compute_mode = static_cast<nvmlComputeMode_t>(g.at("compute_mode").get<int>());
      x.power_mw = g.at("power_mw");
      x.power_min_mw = g.at("power_min_mw");
      x.power_max_mw = g.at("power_max_mw");
      x.graphics_clocks = g.at("graphics_clocks").get<std::vector<unsigned>>();
      x.memory_clocks = g.at("memory_clocks").get<std::vector<unsigned>>();
      x.graphics_now = g.at("graphics_now");
      x.memory_now = g.at("memory_now");
      for (const auto& [k, v] : g.at("locks").items())
        x.locks[k == "graphics" ? ClockDomain::graphics : ClockDomain::memory] = {v.at(0), v.at(1)};
      fake->gpus.push_back(std::move(x));
    }
  } catch (const nlohmann::json::exception& e) {
    throw_bad_input(fmt::format("{}: not a fake-GPU state file: {}", file.string(), e.what()));
  }
  return fake;
}

void FakeGpuControl::save() const {
  if (file_.empty()) return;
  nlohmann::json j;
  j["schema"] = "gpusqueeze.fake-gpu/1";
  j["synthetic"] = "fake GPUs for tests (GSQ_TUNE_FAKE_GPU): no value here was measured";
  j["cuda_driver"] = cuda_driver;
  for (const auto& g : gpus) {
    nlohmann::json locks = nlohmann::json::object();
    for (const auto& [d, v] : g.locks) locks[domain_name(d)] = {v.first, v.second};
    j["gpus"].push_back({{"name", g.id.name},
                         {"uuid", g.id.uuid},
                         {"bus_id", g.id.bus_id},
                         {"persistence", g.persistence},
                         {"compute_mode", static_cast<int>(g.compute_mode)},
                         {"power_mw", g.power_mw},
                         {"power_min_mw", g.power_min_mw},
                         {"power_max_mw", g.power_max_mw},
                         {"graphics_clocks", g.graphics_clocks},
                         {"memory_clocks", g.memory_clocks},
                         {"graphics_now", g.graphics_now},
                         {"memory_now", g.memory_now},
                         {"locks", locks}});
  }
  write_json_file(file_, j);
}

void FakeGpuControl::inject(const std::string& call, nvmlReturn_t rc, int times) {
  injected_[call] = {rc, times};
}

nvmlReturn_t FakeGpuControl::enter(const std::string& call, unsigned gpu) {
  for (const auto& key : {call, std::string("*")}) {
    auto it = injected_.find(key);
    if (it != injected_.end() && it->second.second > 0) {
      --it->second.second;
      return it->second.first;
    }
  }
  return gpu < gpus.size() ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t FakeGpuControl::wrote(const std::string& call) {
  ++writes;
  save();
  if (!crash_after_.empty() && crash_after_ == call) {
    crash_after_.clear();
    throw SimulatedCrash{};
  }
  return NVML_SUCCESS;
}

nvmlReturn_t FakeGpuControl::count(unsigned& n) {
  n = static_cast<unsigned>(gpus.size());
  return enter("count", 0);
}
nvmlReturn_t FakeGpuControl::identity(unsigned gpu, GpuIdentity& id) {
  if (const auto rc = enter("identity", gpu); rc != NVML_SUCCESS) return rc;
  id = gpus[gpu].id;
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::persistence(unsigned gpu, bool& on) {
  if (const auto rc = enter("persistence", gpu); rc != NVML_SUCCESS) return rc;
  on = gpus[gpu].persistence;
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::set_persistence(unsigned gpu, bool on) {
  if (const auto rc = enter("set_persistence", gpu); rc != NVML_SUCCESS) return rc;
  gpus[gpu].persistence = on;
  return wrote("set_persistence");
}
nvmlReturn_t FakeGpuControl::compute_mode(unsigned gpu, nvmlComputeMode_t& mode) {
  if (const auto rc = enter("compute_mode", gpu); rc != NVML_SUCCESS) return rc;
  mode = gpus[gpu].compute_mode;
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::set_compute_mode(unsigned gpu, nvmlComputeMode_t mode) {
  if (const auto rc = enter("set_compute_mode", gpu); rc != NVML_SUCCESS) return rc;
  if (mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD || mode >= NVML_COMPUTEMODE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  gpus[gpu].compute_mode = mode;
  return wrote("set_compute_mode");
}
nvmlReturn_t FakeGpuControl::power_limit(unsigned gpu, unsigned& mw) {
  if (const auto rc = enter("power_limit", gpu); rc != NVML_SUCCESS) return rc;
  mw = gpus[gpu].power_mw;
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::power_limit_range(unsigned gpu, unsigned& min_mw, unsigned& max_mw) {
  if (const auto rc = enter("power_limit_range", gpu); rc != NVML_SUCCESS) return rc;
  min_mw = gpus[gpu].power_min_mw;
  max_mw = gpus[gpu].power_max_mw;
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::set_power_limit(unsigned gpu, unsigned mw) {
  if (const auto rc = enter("set_power_limit", gpu); rc != NVML_SUCCESS) return rc;
  auto& g = gpus[gpu];
  if (mw < g.power_min_mw || mw > g.power_max_mw) return NVML_ERROR_INVALID_ARGUMENT;
  g.power_mw = mw;
  return wrote("set_power_limit");
}
nvmlReturn_t FakeGpuControl::supported_clocks(unsigned gpu, ClockDomain d, std::vector<unsigned>& mhz) {
  if (const auto rc = enter("supported_clocks", gpu); rc != NVML_SUCCESS) return rc;
  mhz = d == ClockDomain::graphics ? gpus[gpu].graphics_clocks : gpus[gpu].memory_clocks;
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::current_clock(unsigned gpu, ClockDomain d, unsigned& mhz) {
  if (const auto rc = enter("current_clock", gpu); rc != NVML_SUCCESS) return rc;
  const auto& g = gpus[gpu];
  const unsigned now = d == ClockDomain::graphics ? g.graphics_now : g.memory_now;
  const auto lock = g.locks.find(d);
  mhz = lock == g.locks.end() ? now : std::clamp(now, lock->second.first, lock->second.second);
  return NVML_SUCCESS;
}
nvmlReturn_t FakeGpuControl::lock_clocks(unsigned gpu, ClockDomain d, unsigned min_mhz, unsigned max_mhz) {
  if (const auto rc = enter("lock_clocks", gpu); rc != NVML_SUCCESS) return rc;
  if (min_mhz > max_mhz) return NVML_ERROR_INVALID_ARGUMENT;
  gpus[gpu].locks[d] = {min_mhz, max_mhz};
  return wrote("lock_clocks");
}
nvmlReturn_t FakeGpuControl::reset_clocks(unsigned gpu, ClockDomain d) {
  if (const auto rc = enter("reset_clocks", gpu); rc != NVML_SUCCESS) return rc;
  gpus[gpu].locks.erase(d);
  return wrote("reset_clocks");
}
nvmlReturn_t FakeGpuControl::cuda_driver_version(int& version) {
  version = cuda_driver;
  return enter("cuda_driver_version", 0);
}

}  // namespace gsq::tune
