// The fields the fleet compares: one table, read by the sources (which field each series or report key fills) and by
// the judgement (how each is compared and what fixes it).
#pragma once

#include <array>
#include <string_view>

namespace gsq::fleet {

enum class Kind {
  config,   // should be equal across a group: compared with the group's majority
  health,   // a count above zero is the event itself (XIDs, uncorrectable ECC, a pending remap)
  counter,  // an error counter with a normal background rate: apart from the group's median, on its own
  signal,   // a measured value: apart from the group's median; kMinSignals of them make an outlier
};
enum class Bad { low, high };

struct FieldSpec {
  std::string_view id, label;
  Kind kind;
  std::string_view unit;  // appended to values: " W", " MHz"
  Bad bad = Bad::low;     // signals and counters: which side is worse
  // Signals and counters: the robust scale's floor, absolute and relative to the median (the smallest spread that
  // counts: a signal must be kZ floors away to be apart).
  double abs_floor = 0, rel_floor = 0;
  bool fail = false;     // health: a failure, not a warning
  std::string_view fix;  // "{value}" and "{group}" are filled in
  // Signals: the cause they share with others (the clock is lower at the power cap and when slowed for heat: one piece
  // of evidence, not three), and whether they are read only while the GPU is under load.
  std::string_view family = {};
  bool under_load = false;
};

// Floors: clocks and bandwidths vary run to run by ~1% on one card (bench/results/2026-12-04-h200-shuffled, interleaved
// rounds on 10 cards), launch cost by a few percent (2026-12-02-h200-probes-2); throttle fractions are read from a
// gauge sampled every scrape, so a few percent of the window is one or two samples.
inline constexpr std::array<FieldSpec, 27> kFields{{
    {"driver", "driver", Kind::config, "", Bad::low, 0, 0, false,
     "Install the group's driver ({group}) on this node; `gpusqueeze doctor` checks the result"},
    {"cuda_driver", "CUDA driver API", Kind::config, "", Bad::low, 0, 0, false,
     "The node's libcuda differs from its peers' ({group}): the driver's user-space and kernel parts may be mixed"},
    {"vbios", "VBIOS", Kind::config, "", Bad::low, 0, 0, false,
     "Flash the group's VBIOS ({group}) with the vendor's tool, or ask the vendor whether the difference matters"},
    {"power_limit_w", "power limit", Kind::config, " W", Bad::low, 0, 0, false,
     "Set the power limit to the group's {group}: `nvidia-smi -i N -pl` or a tune profile's gpu.N.power_limit_w "
     "(`gpusqueeze tune apply`)"},
    {"sm_clock_max_mhz", "highest SM clock", Kind::config, " MHz", Bad::low, 0, 0, false,
     "One model with another top clock is another board or VBIOS: compare `nvidia-smi -q` with a peer's"},
    {"sm_clock_app_mhz", "application SM clock", Kind::config, " MHz", Bad::low, 0, 0, false,
     "Reset the application clocks (`nvidia-smi -rac`) or apply the group's tune profile"},
    {"pcie_gen_max", "PCIe generation the link allows", Kind::config, "", Bad::low, 0, 0, false,
     "The slot, riser or BIOS allows a slower PCIe link than its peers' ({group}): check the BIOS PCIe speed "
     "setting and the riser; `gpusqueeze doctor` reads the link"},
    {"pcie_width", "PCIe link width", Kind::config, " lanes", Bad::low, 0, 0, false,
     "The link trained narrower than its peers' ({group}): reseat the GPU or its riser, try another slot; "
     "`gpusqueeze doctor`'s pcie-link check confirms"},
    {"mig", "MIG mode", Kind::config, "", Bad::low, 0, 0, false,
     "MIG is {value} where the group has {group}: change it with `nvidia-smi -i N -mig 0|1` (a GPU reset), or keep "
     "the node in a pool of its own"},
    {"ecc", "ECC mode", Kind::config, "", Bad::low, 0, 0, false,
     "ECC is {value} where the group has {group}: `nvidia-smi -i N -e 0|1` and a reset"},
    {"persistence", "persistence mode", Kind::config, "", Bad::low, 0, 0, false,
     "Persistence is {value} where the group has {group}: run nvidia-persistenced (or `nvidia-smi -pm 1`)"},
    {"aspm", "PCIe ASPM policy", Kind::config, "", Bad::low, 0, 0, false,
     "The host's ASPM policy is {value}, its peers' {group}: pcie_aspm.policy= on the kernel command line"},
    {"cpu_governor", "CPU frequency governor", Kind::config, "", Bad::low, 0, 0, false,
     "The host's CPU governor is {value}, its peers' {group}: a tune profile's host.cpu_governor"},
    {"missing_s", "gone from its node for", Kind::health, " s", Bad::high, 0, 0, true,
     "The GPU stopped reporting while its node's exporter went on: it fell off the bus (XID 79) or the driver lost it. "
     "Drain the node, check `nvidia-smi` and the kernel log, reset or replace the GPU"},
    {"xid_events", "XID events", Kind::health, "", Bad::high, 0, 0, true, "Drain the node before more jobs land on it"},
    {"ecc_uncorrected", "uncorrectable ECC errors", Kind::health, "", Bad::high, 0, 0, true,
     "Drain the node and reset the GPU; replace it if errors come back"},
    {"remap_pending", "row remap pending", Kind::health, "", Bad::high, 0, 0, true,
     "Reset the GPU (drain first) so the pending row remap takes effect"},
    {"nvlink_errors", "NVLink errors in the window", Kind::counter, "", Bad::high, 10, 0, false,
     "More NVLink errors than its peers: `nvidia-smi nvlink -e -i N`; reseat or replace the link's parts"},
    {"pcie_replays", "PCIe replays in the window", Kind::counter, "", Bad::high, 10, 0, false,
     "More PCIe replays than its peers: a marginal link (riser, slot, cable); reseat it"},
    {"clock_under_load_mhz", "SM clock under load", Kind::signal, " MHz", Bad::low, 0, 0.01, false,
     "Clocks below the peers' under load: see the throttle reasons beside it (power cap: power delivery or "
     "limit; thermal: cooling)",
     "clock", true},
    {"power_cap_fraction", "time under load at the power cap", Kind::signal, "", Bad::high, 0.03, 0, false,
     "Held at its power limit more than its peers: check the limit, the PSU and the board's power draw", "clock", true},
    {"thermal_fraction", "time under load slowed for heat", Kind::signal, "", Bad::high, 0.03, 0, false,
     "Slowed for heat more than its peers: airflow, fans, or the inlet temperature of its rack", "clock", true},
    {"temperature_under_load_c", "temperature under load", Kind::signal, " °C", Bad::high, 2, 0, false,
     "Hotter than its peers under load: airflow, fans, thermal paste", "heat", true},
    {"hbm_copy_gbps", "measured device-memory copy", Kind::signal, " GB/s", Bad::low, 0, 0.01, false,
     "Slower memory than its peers: check the memory clock and ECC state; `gpusqueeze probe mem`", "memory", false},
    {"pcie_h2d_gbps", "measured PCIe host→device (pinned)", Kind::signal, " GB/s", Bad::low, 0, 0.02, false,
     "A slower host link than its peers: the link, NUMA placement, IOMMU; `gpusqueeze probe pcie`", "pcie", false},
    {"launch_us", "measured kernel launch", Kind::signal, " µs", Bad::high, 0, 0.05, false,
     "Slower launches than its peers: the host (CPU governor, C-states, noisy neighbours); `gpusqueeze probe launch`",
     "host", false},
    {"gemm_tflops", "measured bf16 GEMM", Kind::signal, " TFLOP/s", Bad::low, 0, 0.02, false,
     "Slower math than its peers at the same clocks: power and thermal limits; `gpusqueeze bench core`", "math", false},
}};

// The field of that id, or nullptr.
[[nodiscard]] inline const FieldSpec* field_spec(std::string_view id) noexcept {
  for (const auto& f : kFields)
    if (f.id == id) return &f;
  return nullptr;
}

}  // namespace gsq::fleet
