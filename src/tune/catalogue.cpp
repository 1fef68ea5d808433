// The catalogue of settings `tune` knows, the folklore keys it rejects with the truth, and the checks of [env] values.
#include "tune/catalogue.hpp"

#include "core/nccl_env.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <sstream>

namespace gsq::tune {

const std::vector<Known>& known() {
  static const std::vector<Known> k{
      {"gpu",
       "persistence_mode",
       ValueKind::boolean,
       {},
       "until reboot or driver reload",
       "keeps the driver loaded with no client (NVML SetPersistenceMode; nvidia-persistenced does it at boot)"},
      {"gpu",
       "compute_mode",
       ValueKind::text,
       {"default", "exclusive_process", "prohibited"},
       "until reboot or driver reload",
       "who may create contexts (nvidia-smi -c 0/1/2 = these three, in this order)"},
      {"gpu",
       "power_limit_w",
       ValueKind::number,
       {},
       "until reboot, driver reload or GPU reset",
       "board power limit in watts, within NVML's constraints for the card"},
      {"gpu",
       "gpu_locked_clocks",
       ValueKind::clock_pair,
       {},
       "until reboot, driver reload or GPU reset",
       "[min, max] MHz from the card's supported graphics clocks (nvidia-smi -lgc); NVML has no getter"},
      {"gpu",
       "memory_locked_clocks",
       ValueKind::clock_pair,
       {},
       "until reboot, driver reload or GPU reset",
       "[min, max] MHz from the card's supported memory clocks (nvidia-smi -lmc); NVML has no getter"},
      {"host",
       "cpu_governor",
       ValueKind::text,
       {},
       "until reboot",
       "cpufreq governor of every CPU (one of scaling_available_governors; absent in most VMs)"},
      {"host",
       "pcie_aspm_policy",
       ValueKind::text,
       {"default", "performance", "powersave", "powersupersave"},
       "until reboot (boot: pcie_aspm.policy=)",
       "PCIe active-state power management policy"},
      {"host",
       "transparent_hugepage",
       ValueKind::text,
       {"always", "madvise", "never"},
       "until reboot",
       "/sys/kernel/mm/transparent_hugepage/enabled"},
      {"host",
       "transparent_hugepage_defrag",
       ValueKind::text,
       {"always", "defer", "defer+madvise", "madvise", "never"},
       "until reboot",
       "/sys/kernel/mm/transparent_hugepage/defrag"},
      {"host",
       "numa_balancing",
       ValueKind::integer,
       {},
       "until reboot (sysctl.d to keep)",
       "kernel.numa_balancing: 0 stops the kernel migrating pages of pinned GPU feeders"},
      {"host",
       "irqbalance",
       ValueKind::text,
       {"active", "inactive"},
       "until reboot (systemctl enable/disable to keep)",
       "the irqbalance service; stop it to pin NIC interrupts to the NIC's NUMA node yourself"},
      {"framework",
       "float32_matmul_precision",
       ValueKind::text,
       {"highest", "high", "medium"},
       "per process",
       "torch.set_float32_matmul_precision: highest = fp32, high = TF32 where available, medium = bf16"},
      {"framework",
       "matmul_allow_tf32",
       ValueKind::boolean,
       {},
       "per process",
       "torch.backends.cuda.matmul.allow_tf32 (default False since PyTorch 1.12)"},
      {"framework",
       "cudnn_allow_tf32",
       ValueKind::boolean,
       {},
       "per process",
       "torch.backends.cudnn.allow_tf32 (default True)"},
      {"framework",
       "cudnn_benchmark",
       ValueKind::boolean,
       {},
       "per process",
       "torch.backends.cudnn.benchmark: times conv algorithms per new input shape; only for fixed shapes"},
  };
  return k;
}

// Keys people copy from tuning folklore, with what is true and what to use instead.
const std::map<std::string, std::string>& rejected() {
  static const std::map<std::string, std::string> r{
      {"gpu.application_clocks",
       "application clocks are deprecated in NVML 13 (removed in CUDA 14): use gpu_locked_clocks and "
       "memory_locked_clocks"},
      {"gpu.applications_clocks", "deprecated in NVML 13: use gpu_locked_clocks and memory_locked_clocks"},
      {"gpu.dynamic_boost",
       "Dynamic Boost is the notebook CPU/GPU power-sharing daemon (nvidia-powerd), not a data-center setting: use "
       "power_limit_w and gpu_locked_clocks"},
      {"gpu.powermizer_mode",
       "PowerMizer (nvidia-settings GpuPowerMizerMode) needs an X server on the GPU and is a desktop policy: use "
       "gpu_locked_clocks"},
      {"gpu.ecc_mode",
       "ECC mode persists by itself and takes effect after a reboot (nvidia-smi -e); tune does not write it"},
      {"gpu.auto_boost", "auto boost cannot be controlled on Pascal and later GPUs: use gpu_locked_clocks"},
      {"env.CUDA_MALLOC_PER_BLOCK",
       "no such CUDA variable (not in the CUDA Programming Guide's list): PyTorch's caching allocator takes "
       "PYTORCH_ALLOC_CONF (max_split_size_mb, expandable_segments, ...)"},
      {"env.CUDA_MALLOC_POOL_SIZE",
       "no such CUDA variable: PyTorch's allocator is configured with PYTORCH_ALLOC_CONF; cudaMallocAsync pools "
       "with cudaMemPoolSetAttribute in code"},
      {"host.force_latency",
       "the C-state limit lasts only while a process holds /dev/cpu_dma_latency open: use TuneD's cpu plugin "
       "(force_latency) in a resident daemon"},
  };
  return r;
}

const std::vector<DocumentedDefault>& documented_defaults() {
  static const std::vector<DocumentedDefault> d{
      {"env.CUDA_MODULE_LOADING", "LAZY", 12020,
       "CUDA Programming Guide, \"Lazy Loading\": the default since CUDA 12.2"},
      {"env.CUDA_DEVICE_MAX_CONNECTIONS", "8", 0, "CUDA Programming Guide, \"CUDA Environment Variables\": default 8"},
      {"env.CUDA_LAUNCH_BLOCKING", "0", 0, "CUDA Programming Guide, \"CUDA Environment Variables\": default 0"},
      {"env.CUDA_CACHE_DISABLE", "0", 0, "CUDA Programming Guide, \"CUDA Environment Variables\": default 0"},
  };
  return d;
}

std::optional<std::string> default_when_unset(const std::string& id, std::optional<int> cuda_driver_version) {
  for (const auto& d : documented_defaults())
    if (id == d.id &&
        (d.since_cuda_driver == 0 || (cuda_driver_version && *cuda_driver_version >= d.since_cuda_driver)))
      return d.value;
  return std::nullopt;
}

namespace {

// The CUDA driver and runtime variables of the CUDA Programming Guide's environment-variable list.
const std::set<std::string>& cuda_variables() {
  static const std::set<std::string> v{"CUDA_VISIBLE_DEVICES",
                                       "CUDA_DEVICE_ORDER",
                                       "CUDA_MANAGED_FORCE_DEVICE_ALLOC",
                                       "CUDA_CACHE_DISABLE",
                                       "CUDA_CACHE_PATH",
                                       "CUDA_CACHE_MAXSIZE",
                                       "CUDA_FORCE_PTX_JIT",
                                       "CUDA_DISABLE_PTX_JIT",
                                       "CUDA_FORCE_JIT",
                                       "CUDA_DISABLE_JIT",
                                       "CUDA_LAUNCH_BLOCKING",
                                       "CUDA_DEVICE_MAX_CONNECTIONS",
                                       "CUDA_DEVICE_MAX_COPY_CONNECTIONS",
                                       "CUDA_AUTO_BOOST",
                                       "CUDA_SCALE_LAUNCH_QUEUES",
                                       "CUDA_GRAPHS_USE_NODE_PRIORITY",
                                       "CUDA_DEVICE_WAITS_ON_EXCEPTION",
                                       "CUDA_MODULE_LOADING",
                                       "CUDA_MODULE_DATA_LOADING",
                                       "CUDA_DISABLE_PERF_BOOST",
                                       "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
                                       "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION",
                                       "CUDA_ENABLE_LIGHTWEIGHT_COREDUMP",
                                       "CUDA_COREDUMP_FILE",
                                       "CUDA_ENABLE_USER_TRIGGERED_COREDUMP",
                                       "CUDA_COREDUMP_PIPE",
                                       "CUDA_MPS_PIPE_DIRECTORY",
                                       "CUDA_MPS_LOG_DIRECTORY",
                                       "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                                       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                                       "CUDA_MPS_CLIENT_PRIORITY",
                                       "CUDA_LOG_FILE"};
  return v;
}

// Options of PyTorch's allocator configuration (docs/source/notes/cuda.md).
const std::set<std::string>& alloc_options() {
  static const std::set<std::string> o{"backend",
                                       "large_segment_size_mb",
                                       "max_split_size_mb",
                                       "roundup_power2_divisions",
                                       "max_non_split_rounding_mb",
                                       "garbage_collection_threshold",
                                       "expandable_segments",
                                       "per_process_memory_fraction",
                                       "throw_on_cudamalloc_oom",
                                       "graph_capture_record_stream_reuse",
                                       "release_lock_on_cudamalloc",
                                       "pinned_use_cuda_host_register",
                                       "pinned_num_register_threads",
                                       "pinned_use_background_threads",
                                       "pinned_reserve_segment_size_mb"};
  return o;
}

const std::array<const char*, 11> kPassThroughPrefixes{"NCCL_",   "PYTORCH_", "TORCH_",     "TORCHINDUCTOR_",
                                                       "TRITON_", "CUBLAS_",  "CUBLASLT_",  "CUDNN_",
                                                       "NVIDIA_", "OMP_",     "TORCH_NCCL_"};

std::vector<std::string> split_options(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

}  // namespace

std::string env_problem(const std::string& name, const std::string& value) {
  if (const auto r = rejected().find("env." + name); r != rejected().end())
    return fmt::format("env.{}: {}", name, r->second);
  if (const auto n = nccl_env_notes().find(name); n != nccl_env_notes().end() && n->second.kind != NcclEnvKind::debug)
    return fmt::format("env.{}: {}; instead: {}", name, n->second.truth, n->second.instead);
  if (name.rfind("CUDA_", 0) == 0) {
    if (!cuda_variables().count(name))
      return fmt::format(
          "env.{}: not a CUDA environment variable (CUDA Programming Guide, "
          "\"CUDA Environment Variables\")",
          name);
  } else if (std::none_of(kPassThroughPrefixes.begin(), kPassThroughPrefixes.end(),
                          [&](const char* p) { return name.rfind(p, 0) == 0; })) {
    return fmt::format(
        "env.{}: the env group holds the GPU stack's variables (CUDA_*, NCCL_*, "
        "PYTORCH_*, TORCH*, TRITON_*, CUBLAS*, CUDNN_*, NVIDIA_*, OMP_*)",
        name);
  }
  if (name == "CUDA_MODULE_LOADING" && value != "LAZY" && value != "EAGER")
    return "env.CUDA_MODULE_LOADING: LAZY or EAGER (LAZY is the default since CUDA 12.2)";
  if (name == "CUDA_DEVICE_MAX_CONNECTIONS") {
    int n = 0;
    std::istringstream in(value);
    if (!(in >> n) || !in.eof() || n < 1 || n > 32) return "env.CUDA_DEVICE_MAX_CONNECTIONS: an integer from 1 to 32";
  }
  if (name == "PYTORCH_ALLOC_CONF" || name == "PYTORCH_CUDA_ALLOC_CONF") {
    for (const auto& opt : split_options(value)) {
      const auto colon = opt.find(':');
      const auto key = opt.substr(0, colon);
      if (colon == std::string::npos || !alloc_options().count(key))
        return fmt::format(
            "env.{}: '{}' is not an allocator option (opt:value pairs separated by "
            "commas; options: backend, max_split_size_mb, expandable_segments, "
            "garbage_collection_threshold, roundup_power2_divisions, ...)",
            name, opt);
    }
  }
  return "";
}

const std::vector<KeyInfo>& catalogue() {
  static const std::vector<KeyInfo> c = [] {
    std::vector<KeyInfo> out;
    for (const auto& k : known()) {
      std::string words;
      for (const auto& w : k.words) words += fmt::format("{}{}", words.empty() ? "" : "|", w);
      if (words.empty())
        words = k.kind == ValueKind::boolean      ? "true|false"
                : k.kind == ValueKind::clock_pair ? "[min, max] MHz"
                : k.kind == ValueKind::number     ? "watts"
                : k.kind == ValueKind::integer    ? "0|1"
                                                  : "text";
      out.push_back({k.group, k.key, words, k.lasts, k.meaning});
    }
    out.push_back({"module", "nvidia.NAME", "integer|text", "from the next module load",
                   "any parameter the loaded driver prints in /proc/driver/nvidia/params (NVreg_ prefix optional)"});
    out.push_back({"env", "NAME", "text", "processes started with the env file",
                   "CUDA_* of the CUDA Programming Guide's list, NCCL_*, PYTORCH_ALLOC_CONF, TORCH*, TRITON_*, ..."});
    for (const auto& [id, why] : rejected())
      out.push_back({id.substr(0, id.find('.')), id.substr(id.find('.') + 1), "rejected", "-", why});
    return out;
  }();
  return c;
}

}  // namespace gsq::tune
