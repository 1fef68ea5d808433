// The settings of one machine as tunables: how each is read, checked, written and how long it lasts. Every path is
// under `root` (sysfs, procfs, /etc, /var/lib), so tests run the real code against a temporary tree; the GPU goes
// through GpuControl, so tests run it against the fake.
#pragma once

#include "core/field.hpp"
#include "core/process.hpp"
#include "tune/gpu_control.hpp"
#include "tune/profile.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gsq::tune {

// The value of an environment variable or module option that is not set.
inline constexpr const char* kUnset = "(unset)";
// The "previous value" of a clock lock: NVML cannot read a lock, so rollback restores by the reset call.
inline constexpr const char* kReset = "(reset)";

struct Machine {
  std::filesystem::path root = "/";
  GpuControl* gpu = nullptr;                                                        // null: no NVIDIA driver here
  std::string gpu_missing;                                                          // why gpu is null
  std::function<ProcessOutput(const std::vector<std::string>&)> run = run_process;  // systemctl for irqbalance
  std::optional<int> pid;  // env settings are checked in this process's environment

  [[nodiscard]] std::filesystem::path at(const std::string& absolute) const;  // root + "/etc/…"
  // The profile the boot unit applies and the exporter, doctor and report verify.
  [[nodiscard]] std::filesystem::path installed_profile() const { return at("/etc/gpusqueeze/tune.toml"); }
  [[nodiscard]] std::filesystem::path env_file() const { return at("/etc/gpusqueeze/tune.env"); }
  [[nodiscard]] std::filesystem::path modprobe_file() const { return at("/etc/modprobe.d/gpusqueeze.conf"); }
  [[nodiscard]] std::filesystem::path state_dir() const { return at("/var/lib/gpusqueeze/tune"); }
  [[nodiscard]] std::string boot_id() const;  // empty when unknown
};

enum class Lasting {
  live,       // in effect at once, lost at reboot or driver reload
  next_load,  // configured now, in effect from the next module load or reboot
  process,    // set inside the serving process (env file, framework snippet)
};

struct Tunable {
  std::string id;
  Lasting lasting = Lasting::live;
  // The value in effect; none(why) when the knob does not exist here (skipped, never failed).
  std::function<Field<std::string>()> read;
  // next_load and env: the value configured for the next start; empty function when the same as read.
  std::function<Field<std::string>()> configured;
  // Why `value` cannot be applied here (outside the supported clocks, the power range, the governors...), else empty.
  std::function<std::string(const std::string&)> check;
  // Writes `value` (kUnset/kReset restore a missing option or a lock); throws gsq::Error with the reason.
  std::function<void(const std::string&)> write;
  bool no_getter = false;  // locked clocks: read() is always none; verify uses apply's record and the observed clock
  // Locked clocks: the clock observed now, for verify's evidence.
  std::function<std::optional<unsigned>()> observe;
};

// The tunable for a concrete setting id ("gpu.0.power_limit_w", "host.numa_balancing", ...). Throws Error(bad_input)
// for an id the catalogue does not know.
[[nodiscard]] Tunable tunable(const Machine& m, const std::string& id);

// The profile's settings for this machine: `gpu.*.key` expanded to every GPU, UUID selectors turned into indices,
// per-GPU settings winning over `gpu.*`. GPU settings stay unexpanded when there is no driver (verify skips them).
[[nodiscard]] std::vector<Setting> resolve(const Profile& p, const Machine& m);

// The ids capture reads on this machine, with the kind of value each holds.
[[nodiscard]] std::vector<std::pair<std::string, ValueKind>> capturable(const Machine& m);

// NVML's answer as a message with what to do: "NVML_ERROR_NO_PERMISSION: run as root (NVML setters are root-only)".
[[nodiscard]] std::string nvml_message(nvmlReturn_t rc);

}  // namespace gsq::tune
