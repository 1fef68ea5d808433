// capture, verify, plan, apply and rollback over the tunables of one machine, with the journal of saved values.
#include "tune/engine.hpp"

#include "tune/catalogue.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "gpu/collect.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gsq::tune {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStateSchema = "gpusqueeze.tune-state/1";

fs::path state_file(const Machine& m) {
  return m.state_dir() / "state.json";
}

void write_state(const Machine& m, const nlohmann::json& state) {
  fs::create_directories(m.state_dir());
  write_json_file(state_file(m), state);
}

nlohmann::json* entry_of(nlohmann::json& state, const std::string& id) {
  for (auto& e : state["entries"])
    if (e.value("id", "") == id) return &e;
  return nullptr;
}

// A lock gpusqueeze applied in this boot: NVML cannot read locks back, so this record is the only evidence.
std::optional<nlohmann::json> lock_record(const nlohmann::json& state, const Machine& m, const std::string& id) {
  if (state.value("boot_id", "") != m.boot_id()) return std::nullopt;
  for (const auto& e : state["entries"])
    if (e.value("id", "") == id && e.value("status", "") == "written") return e;
  return std::nullopt;
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Check verify_lock(const Setting& s, const Tunable& t, const nlohmann::json& state, const Machine& m) {
  Check c{s.id, Status::failed, "unknown", s.value, ""};
  const auto rec = lock_record(state, m, s.id);
  if (!rec) {
    c.detail = "NVML has no getter for a clock lock, and gpusqueeze has not applied one since this boot";
    return c;
  }
  const auto target = rec->value("target", "");
  c.actual = target + " (recorded)";
  if (target != s.value) {
    c.detail = fmt::format("apply recorded {} at {}", target, rec->value("time", "?"));
    return c;
  }
  const auto max = static_cast<unsigned>(std::stoul(s.value.substr(s.value.find(',') + 1)));
  const auto seen = t.observe ? t.observe() : std::nullopt;
  if (seen && *seen > max) {
    c.actual = fmt::format("{} MHz observed", *seen);
    c.detail = "above the lock's max: the lock is gone (GPU reset, driver reload or another tool)";
    return c;
  }
  c.status = Status::passed;
  c.actual = s.value;
  c.detail = fmt::format("recorded by apply at {} (NVML has no getter); clock now {}", rec->value("time", "?"),
                         seen ? fmt::format("{} MHz, within the lock", *seen) : std::string("not readable"));
  return c;
}

// Why an unset setting already has the profile's value: its documented default on this driver ("" when it has not).
// The driver's CUDA version is read only for a setting with a default that depends on it.
std::string unset_means(const Setting& s, const std::string& now, const Machine& m) {
  if (now != kUnset) return "";
  const auto& all = documented_defaults();
  const auto d = std::find_if(all.begin(), all.end(), [&](const DocumentedDefault& x) { return s.id == x.id; });
  if (d == all.end()) return "";
  std::optional<int> driver;
  if (int v = 0; d->since_cuda_driver != 0 && m.gpu != nullptr && m.gpu->cuda_driver_version(v) == NVML_SUCCESS)
    driver = v;
  if (default_when_unset(s.id, driver) != s.value) return "";
  return d->since_cuda_driver == 0 ? fmt::format("unset is {} ({})", s.value, d->source)
                                   : fmt::format("unset is {} on this driver (CUDA {}.{}; {})", s.value, *driver / 1000,
                                                 (*driver % 1000) / 10, d->source);
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::passed:
      return "passed";
    case Status::failed:
      return "failed";
    case Status::skipped:
      return "skipped";
    case Status::pending:
      return "pending";
  }
  return "?";
}

nlohmann::json read_state(const Machine& m) {
  if (!fs::exists(state_file(m)))
    return {{"schema", kStateSchema}, {"boot_id", ""}, {"entries", nlohmann::json::array()}};
  auto j = read_json_file(state_file(m), kStateSchema);
  if (!j.contains("entries") || !j["entries"].is_array())
    throw_bad_input(fmt::format("{}: no entries list; move it aside to start again", state_file(m).string()));
  for (const auto& e : j["entries"])
    if (!e.is_object() || !e.contains("id") || !e.contains("previous") || !e["id"].is_string() ||
        !e["previous"].is_string())
      throw_bad_input(fmt::format("{}: an entry lacks id or previous: {}", state_file(m).string(), e.dump()));
  return j;
}

CheckCounts count_checks(const std::vector<Check>& checks) {
  CheckCounts c;
  for (const auto& x : checks) {
    c.passed += x.status == Status::passed;
    c.failed += x.status == Status::failed;
    c.skipped += x.status == Status::skipped;
    c.pending += x.status == Status::pending;
  }
  return c;
}

std::vector<Check> verify(const Profile& p, const Machine& m) {
  const auto state = read_state(m);
  std::vector<Check> out;
  const auto settings = resolve(p, m);
  for (const auto& s : settings) {
    const auto t = tunable(m, s.id);
    const auto now = t.read();
    if (t.no_getter && now.ok()) {
      out.push_back(verify_lock(s, t, state, m));
      continue;
    }
    Check c{s.id, Status::skipped, "", s.value, ""};
    if (!now.ok()) {
      c.detail = s.group() == "framework" ? now.unsupported : "missing here: " + now.unsupported;
    } else if (*now == s.value) {
      c.status = Status::passed;
      c.actual = *now;
      if (s.group() == "env")
        c.detail = m.pid ? fmt::format("in process {}", *m.pid)
                         : fmt::format("in {}; --pid PID checks a running process", m.env_file().string());
    } else if (const auto why = unset_means(s, *now, m); !why.empty()) {
      c.status = Status::passed;
      c.actual = *now;
      c.detail = why;
    } else if (t.lasting == Lasting::next_load && t.configured && t.configured().value == s.value) {
      c.status = Status::pending;
      c.actual = *now;
      c.detail =
          "configured in modprobe.d; in effect from the next load of the nvidia module (GPU idle: rmmod nvidia_uvm "
          "nvidia_drm nvidia_modeset nvidia && modprobe nvidia, or reboot; rebuild the initramfs if nvidia loads from "
          "it)";
    } else {
      c.status = Status::failed;
      c.actual = *now;
      if (t.lasting == Lasting::next_load && t.configured)
        c.detail = fmt::format("configured: {}", t.configured().value.value_or("?"));
      if (s.group() == "env")
        c.detail = m.pid ? fmt::format("in process {}", *m.pid) : fmt::format("in {}", m.env_file().string());
    }
    out.push_back(std::move(c));
  }
  for (const auto& entry : p.unsupported) {  // (clang 14 cannot capture a structured binding in the lambda)
    const auto& id = entry.first;
    if (std::none_of(settings.begin(), settings.end(), [&](const Setting& s) { return s.id == id; }))
      out.push_back({id, Status::skipped, "", "", "not readable when captured: " + entry.second});
  }
  return out;
}

Profile capture(const Machine& m) {
  Profile p;
  p.summary = fmt::format("captured on {} at {}", host::hostname().value_or("this machine"), gpu::utc_now_iso8601());
  if (m.gpu == nullptr) p.unsupported["gpu.*"] = m.gpu_missing.empty() ? "no NVIDIA driver here" : m.gpu_missing;
  for (const auto& [id, kind] : capturable(m)) {
    const auto t = tunable(m, id);
    auto v = t.read();
    if (t.no_getter) {
      p.unsupported[id] = v.ok() ? "NVML has no getter for a clock lock: add [min, max] by hand from `nvidia-smi -q "
                                   "-d SUPPORTED_CLOCKS`"
                                 : v.unsupported;
      continue;
    }
    if (!v.ok()) {
      p.unsupported[id] = v.unsupported;
      continue;
    }
    const ValueKind k = kind == ValueKind::integer && !is_integer(*v) ? ValueKind::text : kind;
    p.settings.push_back({id, *v, k, "captured"});
  }
  return p;
}

std::vector<Step> plan(const Profile& p, const Machine& m) {
  const auto state = read_state(m);
  std::vector<Step> out;
  std::vector<std::string> refused;
  for (const auto& s : resolve(p, m)) {
    const auto t = tunable(m, s.id);
    Step step{s.id, "", s.value, Step::Action::change, ""};
    if (s.group() == "framework") {
      step.action = Step::Action::in_process;
      step.note = "set inside the process: gpusqueeze tune snippet";
      out.push_back(step);
      continue;
    }
    const auto now = t.read();
    if (!now.ok()) {
      if (s.group() == "module" && t.check)  // a misspelt option of a loaded driver is refused, not skipped
        if (const auto why = t.check(s.value); !why.empty())
          refused.push_back(fmt::format("{}: {}: {}", s.origin, s.id, why));
      step.action = Step::Action::skip;
      step.note = "missing here: " + now.unsupported;
      out.push_back(step);
      continue;
    }
    if (t.no_getter) {
      const auto rec = lock_record(state, m, s.id);
      step.from = rec ? rec->value("target", "") : "unknown (no NVML getter)";
    } else {
      step.from = t.configured ? t.configured().value.value_or(*now) : *now;
    }
    if (t.check)
      if (const auto why = t.check(s.value); !why.empty())
        refused.push_back(fmt::format("{}: {}: {}", s.origin, s.id, why));
    if (step.from == step.to) step.action = Step::Action::unchanged;
    if (const auto why = unset_means(s, step.from, m); !why.empty()) {
      step.action = Step::Action::unchanged;
      step.note = why;
      out.push_back(step);
      continue;
    }
    if (t.lasting == Lasting::next_load) step.note = "in effect from the next module load";
    if (t.lasting == Lasting::process && s.group() == "env") step.note = "for processes started with the env file";
    out.push_back(step);
  }
  if (!refused.empty()) {
    std::string text = "this machine refuses the profile (nothing was written):";
    for (const auto& r : refused) text += "\n  " + r;
    throw_bad_input(text);
  }
  return out;
}

ApplyResult apply(const Profile& p, const std::string& profile_name, const Machine& m) {
  const auto steps = plan(p, m);
  auto state = read_state(m);
  const auto boot = m.boot_id();
  if (state.value("boot_id", "") != boot) {  // locks recorded in an earlier boot are gone: forget them
    auto& entries = state["entries"];
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [](const nlohmann::json& e) { return e.value("previous", "") == kReset; }),
                  entries.end());
  }
  state["boot_id"] = boot;
  state["profile"] = profile_name;
  ApplyResult r;
  for (const auto& step : steps) {
    if (step.action != Step::Action::change) continue;
    const auto t = tunable(m, step.id);
    auto* e = entry_of(state, step.id);
    if (e == nullptr) {  // the value before gpusqueeze's first write is the one rollback restores
      state["entries"].push_back({{"id", step.id}, {"previous", t.no_getter ? kReset : step.from}});
      e = &state["entries"].back();
    }
    (*e)["target"] = step.to;
    (*e)["time"] = gpu::utc_now_iso8601();
    const bool written_before = e->value("status", "") == "written";
    (*e)["status"] = "writing";
    write_state(m, state);
    try {
      t.write(step.to);
    } catch (const Error& err) {
      r.failed_id = step.id;
      r.error = err.what();
      if (written_before) {
        (*e)["status"] = "failed";
        (*e)["error"] = r.error;
      } else {  // never written: nothing to restore
        auto& entries = state["entries"];
        entries.erase(std::remove_if(entries.begin(), entries.end(),
                                     [&](const nlohmann::json& x) { return x.value("id", "") == step.id; }),
                      entries.end());
      }
      write_state(m, state);
      return r;
    }
    (*e)["status"] = "written";
    write_state(m, state);
    r.applied.push_back(step.id);
  }
  r.checks = verify(p, m);
  return r;
}

RollbackResult rollback(const Machine& m) {
  auto state = read_state(m);
  RollbackResult r;
  auto& entries = state["entries"];
  for (auto i = static_cast<std::ptrdiff_t>(entries.size()) - 1; i >= 0; --i) {
    const auto e = entries[static_cast<size_t>(i)];
    const auto id = e.value("id", "");
    try {
      const auto t = tunable(m, id);
      if (!t.write)
        throw Error(ExitCode::findings, fmt::format("{}: cannot be written here ({})", id, t.read().unsupported));
      t.write(e.value("previous", ""));
      r.restored.push_back(id);
      entries.erase(entries.begin() + i);
      write_state(m, state);
    } catch (const Error& err) {
      r.failed.emplace_back(id, err.what());
    }
  }
  if (entries.empty() && fs::exists(state_file(m))) fs::remove(state_file(m));
  return r;
}

std::string framework_snippet(const Profile& p) {
  std::string set, check;
  auto py_bool = [](const std::string& v) { return v == "true" ? "True" : "False"; };
  for (const auto& s : p.settings) {
    if (s.group() != "framework") continue;
    const auto k = s.key();
    if (k == "float32_matmul_precision") {
      set += fmt::format("torch.set_float32_matmul_precision(\"{}\")\n", s.value);
      check += fmt::format("_check(\"{}\", torch.get_float32_matmul_precision(), \"{}\")\n", k, s.value);
    } else {
      const auto attr = k == "matmul_allow_tf32"  ? "torch.backends.cuda.matmul.allow_tf32"
                        : k == "cudnn_allow_tf32" ? "torch.backends.cudnn.allow_tf32"
                                                  : "torch.backends.cudnn.benchmark";
      set += fmt::format("{} = {}\n", attr, py_bool(s.value));
      check += fmt::format("_check(\"{}\", {}, {})\n", k, attr, py_bool(s.value));
    }
  }
  std::string out =
      "# Generated by `gpusqueeze tune snippet`: run once at the start of the serving process, after `import torch`.\n"
      "# float32_matmul_precision \"high\" also turns matmul TF32 on; PyTorch >= 2.9 offers torch.backends.*."
      "fp32_precision instead\n# (do not mix the old and new flags).\n"
      "import os\nimport torch\n\n" +
      set +
      "\n\ndef _check(name, actual, expected):\n"
      "    print(f\"{'passed' if actual == expected else 'failed'}  framework.{name} = {actual}\"\n"
      "          + ('' if actual == expected else f\", expected {expected}\"))\n\n\n" +
      check;
  if (const auto* a = p.find("env.PYTORCH_ALLOC_CONF"); a && a->value.find("expandable_segments") != std::string::npos)
    out +=
        "# PyTorch 2.9.1 ignored PYTORCH_ALLOC_CONF=expandable_segments for CUDA (pytorch#183387; fixed by 2.11):\n"
        "if torch.__version__.startswith(\"2.9.\") and \"PYTORCH_CUDA_ALLOC_CONF\" not in os.environ:\n"
        "    print(\"failed  env.PYTORCH_ALLOC_CONF: PyTorch 2.9 needs the old name PYTORCH_CUDA_ALLOC_CONF too\")\n";
  return out;
}

std::string check_line(const Check& c) {
  switch (c.status) {
    case Status::passed:
      return fmt::format("passed   {} = {}{}", c.id, c.actual, c.detail.empty() ? "" : "  (" + c.detail + ")");
    case Status::failed:
      return fmt::format("failed   {} = {}, expected {}{}", c.id, c.actual, c.expected,
                         c.detail.empty() ? "" : "  (" + c.detail + ")");
    case Status::pending:
      return fmt::format("pending  {} = {} configured, {} in effect  ({})", c.id, c.expected, c.actual, c.detail);
    case Status::skipped:
      return fmt::format("skipped  {}  ({})", c.id, c.detail);
  }
  return "";
}

nlohmann::json to_json(const std::vector<Check>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : checks)
    out.push_back({{"id", c.id},
                   {"status", status_name(c.status)},
                   {"actual", c.actual},
                   {"expected", c.expected},
                   {"detail", c.detail}});
  return out;
}

}  // namespace gsq::tune
