#include "monitor/metrics.hpp"

#include <fmt/format.h>

#include <map>

namespace gsq::monitor {

std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {

// One metric family: HELP and TYPE once, then its samples, so the text stays grouped as the format requires.
struct Family {
  std::string help, type;
  std::vector<std::string> samples;
};

class Exposition {
 public:
  void add(const std::string& name, const char* type, const char* help, const std::string& labels, double v) {
    auto& f = families_[name];
    if (f.type.empty()) {
      f.type = type, f.help = help;
      order_.push_back(name);
    }
    f.samples.push_back(fmt::format("{}{{{}}} {}", name, labels, v));  // shortest round-trip form
  }
  [[nodiscard]] std::string text() const {
    std::string out;
    for (const auto& name : order_) {
      const Family& f = families_.at(name);
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, f.type);
      for (const auto& s : f.samples) out += s + '\n';
    }
    return out;
  }

 private:
  std::map<std::string, Family> families_;
  std::vector<std::string> order_;
};

template <class T>
std::string str(const Field<T>& f) {
  if constexpr (std::is_same_v<T, std::string>)
    return f.ok() ? *f : "";
  else
    return f.ok() ? fmt::format("{}", *f) : "";
}

}  // namespace

std::string render_metrics(const gpu::Snapshot& snap, const std::vector<gpu::Counters>& counters,
                           const SelfStats& self) {
  Exposition x;
  const std::string host = snap.host.hostname.ok() ? *snap.host.hostname : "";
  for (size_t i = 0; i < snap.gpus.size(); ++i) {
    const auto& g = snap.gpus[i];
    const std::string L = fmt::format(R"(gpu="{}",uuid="{}",model="{}",hostname="{}")", i, escape_label(str(g.uuid)),
                                      escape_label(str(g.name)), escape_label(host));
    auto gauge = [&](const char* name, const char* help, const auto& field, double scale = 1.0) {
      if (field.ok()) x.add(name, "gauge", help, L, static_cast<double>(*field) * scale);
    };
    auto counter = [&](const char* name, const char* help, const std::string& labels, const auto& field) {
      if (field.ok()) x.add(name, "counter", help, labels, static_cast<double>(*field));
    };
    x.add("gsq_gpu_info", "gauge", "GPU identity (always 1); driver and PCI bus id as labels",
          L + fmt::format(R"(,driver="{}",pci_bus_id="{}")", escape_label(str(snap.host.driver_version)),
                          escape_label(str(g.pci_bus_id))),
          1);
    gauge("gsq_gpu_utilization_ratio", "Fraction of the last sample period a kernel was running (NVML)",
          g.utilization_gpu_pct, 0.01);
    gauge("gsq_gpu_memory_utilization_ratio", "Fraction of the last sample period device memory was read or written",
          g.utilization_memory_pct, 0.01);
    gauge("gsq_gpu_memory_total_bytes", "Device memory", g.memory_total_bytes);
    gauge("gsq_gpu_memory_used_bytes", "Device memory allocated", g.memory_used_bytes);
    gauge("gsq_gpu_memory_reserved_bytes", "Device memory reserved by the driver", g.memory_reserved_bytes);
    if (g.memory_total_bytes.ok() && g.memory_used_bytes.ok()) {
      const double reserved = g.memory_reserved_bytes.ok() ? static_cast<double>(*g.memory_reserved_bytes) : 0;
      x.add("gsq_gpu_memory_free_bytes", "gauge", "Device memory neither allocated nor reserved", L,
            static_cast<double>(*g.memory_total_bytes) - static_cast<double>(*g.memory_used_bytes) - reserved);
    }
    gauge("gsq_gpu_sm_clock_hertz", "SM clock", g.sm_clock_mhz, 1e6);
    gauge("gsq_gpu_sm_clock_max_hertz", "Highest SM clock the GPU supports", g.sm_clock_max_mhz, 1e6);
    gauge("gsq_gpu_memory_clock_hertz", "Memory clock", g.mem_clock_mhz, 1e6);
    if (g.clock_event_reasons_mask.ok()) {
      for (int b = 0; b < 9; ++b) {
        const uint64_t bit = uint64_t{1} << b;
        x.add("gsq_gpu_clock_event_active", "gauge", "1 while NVML reports this clock-event (throttle) reason, else 0",
              L + fmt::format(R"(,reason="{}")", gpu::clock_event_reason_names(bit).front()),
              (*g.clock_event_reasons_mask & bit) ? 1 : 0);
      }
    }
    gauge("gsq_gpu_temperature_celsius", "GPU core temperature", g.temperature_c);
    if (g.temperature_c.ok() && g.temperature_slowdown_c.ok())
      x.add("gsq_gpu_temperature_slowdown_margin_celsius", "gauge",
            "Degrees below the temperature at which the GPU slows down", L,
            static_cast<double>(*g.temperature_slowdown_c - *g.temperature_c));
    gauge("gsq_gpu_power_watts", "Power draw", g.power_draw_w);
    gauge("gsq_gpu_power_limit_watts", "Enforced power limit", g.power_enforced_limit_w);
    gauge("gsq_gpu_pcie_link_generation", "Current PCIe link generation (drops at idle by design)", g.pcie_gen_current);
    gauge("gsq_gpu_pcie_link_generation_max", "Highest PCIe generation of the link", g.pcie_gen_max);
    gauge("gsq_gpu_pcie_link_width", "Current PCIe link width (lanes)", g.pcie_width_current);
    gauge("gsq_gpu_pcie_link_width_max", "Widest PCIe link the slot and GPU support", g.pcie_width_max);
    counter("gsq_gpu_pcie_replays_total", "PCIe replays (link-level retransmissions)", L, g.pcie_replay_counter);
    gauge("gsq_gpu_bar1_used_bytes", "BAR1 memory mapped", g.bar1_used_bytes);
    if (g.mig_mode_current.ok())
      x.add("gsq_gpu_mig_enabled", "gauge", "1 while MIG mode is on, else 0", L, *g.mig_mode_current ? 1 : 0);
    for (const auto& m : g.mig_instances)
      if (m.memory_total_bytes.ok())
        x.add("gsq_gpu_mig_memory_total_bytes", "gauge", "Device memory of a MIG instance of this GPU",
              L + fmt::format(R"(,mig_instance="{}",mig_uuid="{}")", m.index, escape_label(str(m.uuid))),
              static_cast<double>(*m.memory_total_bytes));
    const std::pair<const char*, const Field<uint64_t>*> ecc[] = {
        {R"(,type="corrected",scope="volatile")", &g.ecc_volatile_corrected},
        {R"(,type="uncorrected",scope="volatile")", &g.ecc_volatile_uncorrected},
        {R"(,type="corrected",scope="aggregate")", &g.ecc_aggregate_corrected},
        {R"(,type="uncorrected",scope="aggregate")", &g.ecc_aggregate_uncorrected}};
    for (const auto& [labels, f] : ecc)
      counter("gsq_gpu_ecc_errors_total", "ECC errors since the driver loaded (volatile) or ever (aggregate)",
              L + labels, *f);
    if (g.remapped_rows_correctable.ok())
      x.add("gsq_gpu_remapped_rows", "gauge", "Memory rows remapped", L + R"(,cause="correctable")",
            *g.remapped_rows_correctable);
    if (g.remapped_rows_uncorrectable.ok())
      x.add("gsq_gpu_remapped_rows", "gauge", "Memory rows remapped", L + R"(,cause="uncorrectable")",
            *g.remapped_rows_uncorrectable);
    if (g.remap_pending.ok())
      x.add("gsq_gpu_row_remap_pending", "gauge", "1 when a row remap waits for a GPU reset", L,
            *g.remap_pending ? 1 : 0);
    for (size_t l = 0; l < g.nvlinks.size(); ++l) {
      const auto& n = g.nvlinks[l];
      const std::pair<const char*, const Field<uint64_t>*> errs[] = {{"replay", &n.replay_errors},
                                                                     {"recovery", &n.recovery_errors},
                                                                     {"crc_flit", &n.crc_flit_errors},
                                                                     {"crc_data", &n.crc_data_errors}};
      for (const auto& [type, f] : errs)
        counter("gsq_gpu_nvlink_errors_total", "NVLink error counters per link",
                L + fmt::format(R"(,link="{}",type="{}")", l, type), *f);
    }
    if (g.processes.ok()) {
      for (const auto& p : *g.processes)
        if (p.used_memory_bytes.ok())
          x.add("gsq_gpu_process_memory_used_bytes", "gauge", "Device memory used by a process",
                L + fmt::format(R"(,pid="{}",process="{}")", p.pid, escape_label(p.name)),
                static_cast<double>(*p.used_memory_bytes));
    }
    if (i < counters.size()) {
      const auto& c = counters[i];
      if (c.energy_mj.ok())
        x.add("gsq_gpu_energy_joules_total", "counter", "Energy used since the driver loaded", L,
              static_cast<double>(*c.energy_mj) / 1e3);
      if (c.pcie_tx_kb_per_s.ok())
        x.add("gsq_gpu_pcie_tx_bytes_per_second", "gauge", "PCIe bytes sent by the GPU per second (20 ms window)", L,
              static_cast<double>(*c.pcie_tx_kb_per_s) * 1024);
      if (c.pcie_rx_kb_per_s.ok())
        x.add("gsq_gpu_pcie_rx_bytes_per_second", "gauge", "PCIe bytes received by the GPU per second (20 ms window)",
              L, static_cast<double>(*c.pcie_rx_kb_per_s) * 1024);
      // NVML GPM (Hopper+): averages over the last collection interval. PCIe from GPM is left out: the NVML
      // throughput above is the same quantity.
      for (const auto& [name, v] : c.gpm) {
        if (name == "sm_active")
          x.add("gsq_gpu_sm_active_ratio", "gauge",
                "Fraction of SMs with at least one warp resident, over the last collection interval (GPM)", L, v);
        else if (name == "sm_occupancy")
          x.add("gsq_gpu_sm_occupancy_ratio", "gauge",
                "Resident warps as a fraction of the SMs' warp slots, over the last collection interval (GPM)", L, v);
        else if (name == "dram_bandwidth_utilization")
          x.add("gsq_gpu_dram_bandwidth_utilization_ratio", "gauge",
                "DRAM bandwidth used as a fraction of peak, over the last collection interval (GPM)", L, v);
        else if (name.ends_with("_active"))  // tensor_active, fp16_active, fp32_active, fp64_active
          x.add("gsq_gpu_pipe_active_ratio", "gauge",
                "Activity of a math pipe as a fraction of its peak, over the last collection interval (GPM)",
                L + fmt::format(R"(,pipe="{}")", name.substr(0, name.find('_'))), v);
        else if (name == "nvlink_tx" || name == "nvlink_rx")
          x.add(name == "nvlink_tx" ? "gsq_gpu_nvlink_tx_bytes_per_second" : "gsq_gpu_nvlink_rx_bytes_per_second",
                "gauge", "NVLink bytes per second over all links, over the last collection interval (GPM)", L, v);
      }
      if (c.xid_events.ok())
        x.add("gsq_gpu_xid_events_total", "counter",
              "Critical XID events the driver reported since the exporter started", L,
              static_cast<double>(*c.xid_events));
      if (c.last_xid.ok())
        x.add("gsq_gpu_last_xid", "gauge",
              "Code of the newest XID event (79: fell off the bus, 48: DBE, 94/95: "
              "contained/uncontained ECC, 13/31/43: application faults)",
              L, static_cast<double>(*c.last_xid));
    }
  }
  const std::string H = fmt::format(R"(hostname="{}")", escape_label(host));
  x.add("gsq_exporter_build_info", "gauge", "gpusqueeze exporter version (always 1)",
        H + fmt::format(R"(,version="{}")", escape_label(self.version)), 1);
  x.add("gsq_exporter_gpus", "gauge", "GPUs the exporter sees", H, static_cast<double>(snap.gpus.size()));
  x.add("gsq_exporter_collection_duration_seconds", "gauge", "How long the last NVML collection took", H,
        self.last_collection_seconds);
  x.add("gsq_exporter_last_collection_timestamp_seconds", "gauge", "Unix time of the last collection", H,
        self.last_collection_unix);
  x.add("gsq_exporter_collections_total", "counter", "Collections since start", H,
        static_cast<double>(self.collections));
  x.add("gsq_exporter_collection_errors_total", "counter", "Collections that failed since start", H,
        static_cast<double>(self.collection_errors));
  x.add("gsq_exporter_scrapes_total", "counter", "Scrapes of /metrics since start", H,
        static_cast<double>(self.scrapes));
  x.add("gsq_exporter_connections_cut_total", "counter",
        "Connections shut down for taking longer than the request deadline (slow or stuck clients)", H,
        static_cast<double>(self.connections_cut));
  if (self.watching) {
    x.add("gsq_exporter_captures_total", "counter", "Trace windows the watcher captured and analysed", H,
          static_cast<double>(self.captures));
    x.add("gsq_exporter_capture_errors_total", "counter", "Captures the watcher asked for that failed", H,
          static_cast<double>(self.capture_errors));
  }
  return x.text();
}

}  // namespace gsq::monitor
