// The GPU settings `tune` reads and writes, behind one small interface: NVML on a real machine, an in-process fake in
// the tests (its setters change what its getters return, and any call can be made to fail with an NVML error — the
// shape of DCGM's NVML injection library). Every call answers an nvmlReturn_t; the caller turns it into a message.
#pragma once

#include "gpu/nvml.hpp"

#include <nvml.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gsq::tune {

enum class ClockDomain { graphics, memory };

struct GpuIdentity {
  std::string name, uuid, bus_id;
};

class GpuControl {
 public:
  virtual ~GpuControl() = default;
  [[nodiscard]] virtual nvmlReturn_t count(unsigned& n) = 0;
  [[nodiscard]] virtual nvmlReturn_t identity(unsigned gpu, GpuIdentity& id) = 0;
  [[nodiscard]] virtual nvmlReturn_t persistence(unsigned gpu, bool& on) = 0;
  [[nodiscard]] virtual nvmlReturn_t set_persistence(unsigned gpu, bool on) = 0;
  [[nodiscard]] virtual nvmlReturn_t compute_mode(unsigned gpu, nvmlComputeMode_t& mode) = 0;
  [[nodiscard]] virtual nvmlReturn_t set_compute_mode(unsigned gpu, nvmlComputeMode_t mode) = 0;
  // Milliwatts, as NVML counts them: the requested limit and the range it may take.
  [[nodiscard]] virtual nvmlReturn_t power_limit(unsigned gpu, unsigned& mw) = 0;
  [[nodiscard]] virtual nvmlReturn_t power_limit_range(unsigned gpu, unsigned& min_mw, unsigned& max_mw) = 0;
  [[nodiscard]] virtual nvmlReturn_t set_power_limit(unsigned gpu, unsigned mw) = 0;
  // The clocks a lock may name (graphics clocks: those allowed at the highest memory clock), the clock now, and the
  // lock itself. NVML has no getter for a lock: `tune` keeps its own record of what it set.
  [[nodiscard]] virtual nvmlReturn_t supported_clocks(unsigned gpu, ClockDomain d, std::vector<unsigned>& mhz) = 0;
  [[nodiscard]] virtual nvmlReturn_t current_clock(unsigned gpu, ClockDomain d, unsigned& mhz) = 0;
  [[nodiscard]] virtual nvmlReturn_t lock_clocks(unsigned gpu, ClockDomain d, unsigned min_mhz, unsigned max_mhz) = 0;
  [[nodiscard]] virtual nvmlReturn_t reset_clocks(unsigned gpu, ClockDomain d) = 0;
  // The CUDA version the driver supports, as NVML counts it (12020 = 12.2): some settings' defaults depend on it.
  [[nodiscard]] virtual nvmlReturn_t cuda_driver_version(int& version) = 0;
};

// NVML through the session's function table; a symbol the driver lacks answers NVML_ERROR_FUNCTION_NOT_FOUND.
[[nodiscard]] std::unique_ptr<GpuControl> nvml_control(gpu::Nvml nvml);
// NVML when a driver answers, else null with `why` set to the reason (GPU settings are then skipped, never failed).
[[nodiscard]] std::unique_ptr<GpuControl> open_nvml_control(std::string& why);

// A machine of fake GPUs. Values start at an H200's (the figures of tests/fixtures/h200-snapshot.json); tests and
// GSQ_TUNE_FAKE_GPU files change them. With a file, every setter writes the state back, so separate processes (the CLI
// tests) see one machine. SYNTHETIC: no figure here was measured.
class FakeGpuControl final : public GpuControl {
 public:
  struct Gpu {
    GpuIdentity id;
    bool persistence = true;
    nvmlComputeMode_t compute_mode = NVML_COMPUTEMODE_DEFAULT;
    unsigned power_mw = 700000, power_min_mw = 200000, power_max_mw = 700000;
    std::vector<unsigned> graphics_clocks, memory_clocks;
    unsigned graphics_now = 1980, memory_now = 3201;
    std::map<ClockDomain, std::pair<unsigned, unsigned>> locks;  // what the driver holds; invisible to getters
  };
  int cuda_driver = 13000;  // the H200 fixture's driver (CUDA 13.0)
  explicit FakeGpuControl(unsigned gpus);
  // Loads (or creates with `gpus` defaults) the state file.
  static std::unique_ptr<FakeGpuControl> from_file(const std::filesystem::path& file, unsigned gpus = 1);

  // The next `times` calls of `call` ("set_power_limit", "persistence", ... as named below, or "*") answer `rc`.
  void inject(const std::string& call, nvmlReturn_t rc, int times = 1);
  // The next call of `call` throws SimulatedCrash after doing its work (a process killed between two writes).
  void crash_after(const std::string& call) { crash_after_ = call; }
  struct SimulatedCrash {};

  std::vector<Gpu> gpus;
  int writes = 0;  // setter calls that changed state

  nvmlReturn_t count(unsigned& n) override;
  nvmlReturn_t identity(unsigned gpu, GpuIdentity& id) override;
  nvmlReturn_t persistence(unsigned gpu, bool& on) override;
  nvmlReturn_t set_persistence(unsigned gpu, bool on) override;
  nvmlReturn_t compute_mode(unsigned gpu, nvmlComputeMode_t& mode) override;
  nvmlReturn_t set_compute_mode(unsigned gpu, nvmlComputeMode_t mode) override;
  nvmlReturn_t power_limit(unsigned gpu, unsigned& mw) override;
  nvmlReturn_t power_limit_range(unsigned gpu, unsigned& min_mw, unsigned& max_mw) override;
  nvmlReturn_t set_power_limit(unsigned gpu, unsigned mw) override;
  nvmlReturn_t supported_clocks(unsigned gpu, ClockDomain d, std::vector<unsigned>& mhz) override;
  nvmlReturn_t current_clock(unsigned gpu, ClockDomain d, unsigned& mhz) override;
  nvmlReturn_t lock_clocks(unsigned gpu, ClockDomain d, unsigned min_mhz, unsigned max_mhz) override;
  nvmlReturn_t reset_clocks(unsigned gpu, ClockDomain d) override;
  nvmlReturn_t cuda_driver_version(int& version) override;

 private:
  nvmlReturn_t enter(const std::string& call, unsigned gpu);
  nvmlReturn_t wrote(const std::string& call);
  void save() const;
  std::map<std::string, std::pair<nvmlReturn_t, int>> injected_;
  std::string crash_after_;
  std::filesystem::path file_;
};

}  // namespace gsq::tune
