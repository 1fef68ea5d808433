// Cold-start phases → savings and findings.
#include "triage/coldstart.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>

namespace gsq::triage {

namespace {

constexpr long kNfsSuperMagic = 0x6969;
constexpr const char* kSource = "PyTorch compile caches (torch.compiler, Inductor FX-graph and AOTAutograd caches)";

const Phase* find_phase(const std::vector<Phase>& phases, const std::string& name) {
  for (const auto& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

long long counter(const Phase& p, const std::string& key) {
  const auto it = p.counters.find(key);
  return it == p.counters.end() ? 0 : it->second;
}

long long hits(const Phase& p) {
  return counter(p, "inductor.fxgraph_cache_hit") + counter(p, "aot_autograd.autograd_cache_hit");
}
long long misses(const Phase& p) {
  return counter(p, "inductor.fxgraph_cache_miss") + counter(p, "aot_autograd.autograd_cache_miss");
}

std::string seconds(double s) {
  return fmt::format("{:.2f} s", s);
}

}  // namespace

Phase read_phase(const nlohmann::json& j, const std::string& origin) {
  try {
    if (j.value("schema", "") != kColdstartPhaseSchema)
      throw_bad_input(fmt::format("{}: not a coldstart phase file (schema {})", origin, j.value("schema", "missing")));
    Phase p;
    p.name = j.at("phase").get<std::string>();
    p.import_torch_s = j.at("import_torch_s").get<double>();
    p.first_result_s = j.at("first_result_s").get<double>();
    if (j.contains("compile_s") && j["compile_s"].is_number()) p.compile_s = j["compile_s"].get<double>();
    const auto counters = j.value("counters", nlohmann::json::object());  // named: items() must not outlive it
    for (const auto& [k, v] : counters.items()) p.counters[k] = v.get<long long>();
    const auto environment = j.value("environment", nlohmann::json::object());
    for (const auto& [k, v] : environment.items()) p.environment[k] = v.is_string() ? v.get<std::string>() : v.dump();
    p.artifact_saved_bytes = j.value("artifact_saved_bytes", 0LL);
    p.artifact_loaded_bytes = j.value("artifact_loaded_bytes", 0LL);
    p.exit_code = j.value("exit_code", 0);
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw_bad_input(fmt::format("{}: malformed coldstart phase file: {}", origin, e.what()));
  }
}

ColdstartReport analyze_coldstart(std::string program, std::vector<Phase> phases) {
  ColdstartReport r;
  r.program = std::move(program);
  r.phases = std::move(phases);
  const Phase* eager = find_phase(r.phases, "eager");
  const Phase* cold = find_phase(r.phases, "cold");
  const Phase* local = find_phase(r.phases, "warm-local");
  const Phase* portable = find_phase(r.phases, "warm-portable");
  auto add = [&](const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix) {
    r.findings.push_back(make_finding(id, sev, std::move(title), std::move(ev), std::move(fix), kSource, 8, "program"));
  };
  if (cold && eager) {
    add("coldstart-compile-cost", Severity::info,
        fmt::format("compiling costs {} before the first result ({} eager, {} cold)",
                    seconds(cold->first_result_s - eager->first_result_s), seconds(eager->first_result_s),
                    seconds(cold->first_result_s)),
        {{"eager_first_result_s", fmt::format("{:.2f}", eager->first_result_s)},
         {"cold_first_result_s", fmt::format("{:.2f}", cold->first_result_s)}},
        "");
  }
  if (cold && local) {
    const double saved = cold->first_result_s - local->first_result_s;
    if (hits(*local) == 0 && misses(*local) > 0) {
      add("coldstart-warm-cache-missed", Severity::warn,
          fmt::format("the warm run missed every cache ({} misses, 0 hits): it compiled again", misses(*local)),
          {{"warm_local_misses", std::to_string(misses(*local))}},
          "the cache key changed between identical runs: look for TORCHINDUCTOR_FORCE_DISABLE_CACHES, inputs whose "
          "shapes or dtypes differ per run, or code generated at run time; TORCH_LOGS=+torch._inductor.codecache "
          "prints the keys");
    } else {
      add("coldstart-warm-local", Severity::info,
          fmt::format("the local caches save {} ({:.0f}% of the cold start)", seconds(saved),
                      cold->first_result_s > 0 ? 100.0 * saved / cold->first_result_s : 0.0),
          {{"warm_local_first_result_s", fmt::format("{:.2f}", local->first_result_s)},
           {"warm_local_hits", std::to_string(hits(*local))}},
          "");
    }
    if (eager) {
      const double residual = local->first_result_s - eager->first_result_s;
      add("coldstart-residual", residual > 1.0 ? Severity::warn : Severity::info,
          residual < 0.5 ? fmt::format("a warm start costs no measurable time over eager ({:+.2f} s: within the "
                                       "run-to-run spread of one process start)",
                                       residual)
                         : fmt::format("a warm start still costs {} over eager (tracing and guards run again; caches "
                                       "skip only code generation and compilation)",
                                       seconds(residual)),
          {{"residual_s", fmt::format("{:.2f}", residual)}},
          residual > 1.0 ? "fewer recompiles (mark dynamic dimensions, torch._dynamo.config.recompile_limit), or "
                           "AOTInductor (torch._inductor.aoti_compile_and_package) to skip tracing at start"
                         : "");
    }
  }
  if (portable && local) {
    const double extra = portable->first_result_s - local->first_result_s;
    if (hits(*portable) < hits(*local)) {
      add("coldstart-portable-partial", Severity::warn,
          fmt::format("the portable artifact gave {} cache hits where the local caches gave {}", hits(*portable),
                      hits(*local)),
          {{"portable_hits", std::to_string(hits(*portable))}, {"local_hits", std::to_string(hits(*local))}},
          "save the artifact after the program's whole warm-up (torch.compiler.save_cache_artifacts() at the end), "
          "with the same PyTorch, Triton and GPU as where it is loaded");
    } else if (extra > std::max(0.5, 0.2 * local->first_result_s)) {
      add("coldstart-portable-slower", Severity::warn,
          fmt::format("the portable artifact hits the caches ({} hits) but starts {} slower than the local caches "
                      "({} vs {}; Dynamo {} vs {})",
                      hits(*portable), seconds(extra), seconds(portable->first_result_s),
                      seconds(local->first_result_s), seconds(portable->compile_s.value_or(0)),
                      seconds(local->compile_s.value_or(0))),
          {{"portable_first_result_s", fmt::format("{:.2f}", portable->first_result_s)},
           {"local_first_result_s", fmt::format("{:.2f}", local->first_result_s)}},
          "the artifact holds the generated code, not everything built from it (on a CPU, Inductor's C++ is compiled "
          "again): keep the local cache folder in the image or on a node-local volume where that matters");
    } else {
      add("coldstart-portable", Severity::info,
          fmt::format("the portable artifact ({} KiB) starts as fast as the local caches ({} vs {})",
                      portable->artifact_loaded_bytes / 1024, seconds(portable->first_result_s),
                      seconds(local->first_result_s)),
          {{"artifact_bytes", std::to_string(portable->artifact_loaded_bytes)}},
          "ship it with the image: gpusqueeze coldstart prepare -o cache.bundle -- CMD, then load it at start");
    }
  }
  for (const auto& p : r.phases)
    if (p.exit_code != 0)
      add("coldstart-program-failed", Severity::fail,
          fmt::format("the program exited {} in the {} phase", p.exit_code, p.name), {{"phase", p.name}},
          "run it alone first; its output is in the phase log under --keep DIR");
  return r;
}

nlohmann::json to_json(const ColdstartReport& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases)
    phases.push_back({{"phase", p.name},
                      {"process_s", p.process_s},
                      {"first_result_s", p.first_result_s},
                      {"import_torch_s", p.import_torch_s},
                      {"compile_s", p.compile_s ? nlohmann::json(*p.compile_s) : nlohmann::json(nullptr)},
                      {"counters", p.counters},
                      {"environment", p.environment},
                      {"artifact_saved_bytes", p.artifact_saved_bytes},
                      {"artifact_loaded_bytes", p.artifact_loaded_bytes},
                      {"exit_code", p.exit_code}});
  return {{"schema", kColdstartSchema},
          {"program", r.program},
          {"phases", phases},
          {"notes", r.notes},
          {"findings", r.findings}};
}

std::vector<std::string> bundle_mismatches(const nlohmann::json& bundle,
                                           const std::map<std::string, std::string>& here) {
  if (!bundle.is_object() || !bundle.contains("schema") || !bundle["schema"].is_string() ||
      bundle["schema"].get<std::string>() != kColdstartBundleSchema || !bundle.contains("manifest") ||
      !bundle["manifest"].is_object())
    throw_bad_input("not a gpusqueeze coldstart bundle (schema " + std::string(kColdstartBundleSchema) + ")");
  std::vector<std::string> out;
  for (const char* key : {"torch", "triton", "cuda", "device", "compute_capability"}) {
    const auto& m = bundle["manifest"];
    const std::string made = m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : "";
    const auto it = here.find(key);
    const std::string now = it == here.end() ? "" : it->second;
    if (made != now)
      out.push_back(fmt::format("{}: the bundle was made with '{}', this machine has '{}'", key, made, now));
  }
  return out;
}

std::vector<Finding> cache_folder_findings(const std::filesystem::path& dir) {
  std::vector<Finding> out;
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kNfsSuperMagic)
    out.push_back(make_finding("coldstart-cache-on-nfs", Severity::warn,
                               fmt::format("the compile cache {} is on NFS", dir.string()),
                               {{"cache_dir", dir.string()}},
                               "concurrent compiles lose or corrupt entries on NFS: give each node a local cache "
                               "folder (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR) and ship a Mega-Cache artifact "
                               "instead",
                               kSource, 8, "program"));
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && ((st.st_mode & S_IWOTH) != 0 || st.st_uid != ::geteuid()))
    out.push_back(
        make_finding("coldstart-cache-shared", Severity::warn,
                     fmt::format("the compile cache {} is {}", dir.string(),
                                 (st.st_mode & S_IWOTH) != 0 ? "writable by every user" : "owned by another user"),
                     {{"cache_dir", dir.string()}, {"mode", fmt::format("{:o}", st.st_mode & 07777)}},
                     "a cache other users can write can feed this process code they generated: one cache "
                     "folder per user or service",
                     kSource, 8, "program"));
  return out;
}

}  // namespace gsq::triage
