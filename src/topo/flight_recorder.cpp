#include "topo/flight_recorder.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/pickle.hpp"
#include "topo/nccl_errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

namespace gsq::topo {

namespace {

// The pickle's values as JSON, so both forms are read by one reader (dict keys that are not strings become text).
nlohmann::json as_json(const PyValue& v, int depth = 0) {
  if (depth > 64) throw_bad_input("Flight Recorder dump nested deeper than 64 levels");
  using T = PyValue::Type;
  switch (v.type) {
    case T::none:
      return nullptr;
    case T::boolean:
      return v.boolean;
    case T::integer:
      return v.integer;
    case T::floating:
      return v.floating;
    case T::string:
    case T::bytes:
      return *v.text;
    case T::list:
    case T::tuple: {
      auto a = nlohmann::json::array();
      for (const auto& x : *v.items) a.push_back(as_json(x, depth + 1));
      return a;
    }
    case T::dict: {
      auto o = nlohmann::json::object();
      for (const auto& [k, x] : *v.entries)
        o[k.is(T::string)    ? *k.text
          : k.is(T::integer) ? std::to_string(k.integer)
                             : std::string(k.type_name())] = as_json(x, depth + 1);
      return o;
    }
  }
  return nullptr;
}

// Sizes and dtypes as Python prints them ("[[4096, 5120]]", "['BFloat16']"), so they read as fr_trace shows them.
std::string py_repr(const nlohmann::json& j) {
  if (j.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + py_repr(j[i]);
    return s + "]";
  }
  if (j.is_string()) return "'" + j.get<std::string>() + "'";
  if (j.is_null()) return "None";
  return j.dump();
}

int64_t int_or(const nlohmann::json& o, const char* key, int64_t fallback) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {  // the JSON form writes pg_status counters as text
    try {
      return std::stoll(it->get<std::string>());
    } catch (...) {
      return fallback;
    }
  }
  if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
  return fallback;
}

std::string str_or(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "[0, 1, 2]" (pg_config's ranks since format 2.1) or a list of integers (1.x).
std::vector<int> ranks_of(const nlohmann::json& r) {
  std::vector<int> out;
  if (r.is_array()) {
    for (const auto& x : r)
      if (x.is_number_integer()) out.push_back(x.get<int>());
    return out;
  }
  if (!r.is_string()) return out;
  const std::string s = r.get<std::string>();
  for (size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      out.push_back(std::stoi(s.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

// The global rank in a dump's file name: its last run of digits ("nccl_trace_rank_12", "_dump_3"); -1 if none.
int rank_from_name(const std::string& origin) {
  const std::string name = std::filesystem::path(origin).filename().string();
  const auto digits = last_number_in_name(name);
  if (digits.empty() || digits.size() > 7) return -1;
  return std::stoi(std::string(digits));
}

FrEntry entry_of(const nlohmann::json& e) {
  FrEntry x;
  if (const auto pg = e.find("process_group"); pg != e.end() && pg->is_array() && !pg->empty()) {
    x.group = (*pg)[0].is_string() ? (*pg)[0].get<std::string>() : (*pg)[0].dump();
    if (pg->size() > 1 && (*pg)[1].is_string()) x.desc = (*pg)[1].get<std::string>();
  } else if (e.contains("pg_id")) {  // 1.x: groups known by their id only
    x.group = std::to_string(int_or(e, "pg_id", -1));
  }
  x.op = str_or(e, "profiling_name");
  x.state = str_or(e, "state");
  x.seq = int_or(e, "collective_seq_id", int_or(e, "seq_id", -1));
  x.p2p_seq = int_or(e, "p2p_seq_id", -1);
  x.record_id = int_or(e, "record_id", -1);
  x.timeout_ms = int_or(e, "timeout_ms", 0);
  x.created_ns = int_or(e, "time_created_ns", int_or(e, "time_created_us", 0) * 1000);
  x.p2p = int_or(e, "is_p2p", 0) != 0 || x.op.find("nccl:send") == 0 || x.op.find("nccl:recv") == 0;
  if (const auto it = e.find("input_sizes"); it != e.end()) x.input_sizes = py_repr(*it);
  if (const auto it = e.find("input_dtypes"); it != e.end()) x.input_dtypes = py_repr(*it);
  if (const auto it = e.find("output_sizes"); it != e.end()) x.output_sizes = py_repr(*it);
  return x;
}

FrDump dump_of(const nlohmann::json& j, const std::string& origin) {
  FrDump d;
  d.origin = origin;
  d.rank = rank_from_name(origin);
  const nlohmann::json* entries = nullptr;
  if (j.is_array()) {  // torch 2.2: the bare list of entries
    entries = &j;
    d.version = "list";
  } else if (j.is_object() && (j.contains("entries") || j.contains("pg_config")) && j.contains("version")) {
    d.version = j["version"].is_string() ? j["version"].get<std::string>() : j["version"].dump();
    d.comm_lib_version = str_or(j, "comm_lib_version");
    if (d.comm_lib_version.empty()) d.comm_lib_version = str_or(j, "nccl_version");
    if (const auto it = j.find("entries"); it != j.end() && it->is_array()) entries = &*it;
    if (const auto it = j.find("pg_config"); it != j.end() && it->is_object())
      for (const auto& [name, g] : it->items()) {
        FrDump::Group grp;
        if (g.is_object()) {
          grp.desc = str_or(g, "desc");
          grp.ranks = ranks_of(g.contains("ranks") ? g["ranks"] : nlohmann::json());
        } else {
          grp.ranks = ranks_of(g);
        }
        d.groups[name] = std::move(grp);
      }
  } else {
    throw_bad_input(
        fmt::format("{}: not a Flight Recorder dump (no version, entries or pg_config at the top)", origin));
  }
  if (entries)
    for (const auto& e : *entries)
      if (e.is_object()) d.entries.push_back(entry_of(e));
  for (auto& e : d.entries)
    if (e.desc.empty())
      if (const auto g = d.groups.find(e.group); g != d.groups.end()) e.desc = g->second.desc;
  return d;
}

Finding make(std::string id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix) {
  return make_finding(std::move(id), sev, std::move(title), std::move(ev), std::move(fix),
                      "PyTorch's Flight Recorder (torch/csrc/distributed/c10d/FlightRecorder*.cpp) and its fr_trace "
                      "analyzer; real dumps: NVIDIA/nvidia-resiliency-ext tests/attribution/unit/fr_traces",
                      5, "Flight Recorder");
}

std::string group_name(const FrEntry& e) {
  return e.desc.empty() || e.desc == "undefined" ? "group " + e.group : fmt::format("{} ({})", e.desc, e.group);
}

std::string call_text(const FrEntry& e) {
  return fmt::format("{} #{}{}{}", e.op.empty() ? "a collective" : e.op, e.seq,
                     e.input_sizes.empty() ? "" : " " + e.input_sizes,
                     e.input_dtypes.empty() ? "" : " " + e.input_dtypes);
}

// Collectives whose input sizes must agree on every member (all_to_all, gather and scatter legitimately differ).
bool sizes_must_match(const std::string& op) {
  for (const char* o : {"nccl:all_reduce", "nccl:allreduce", "nccl:broadcast", "nccl:reduce", "nccl:_allgather_base",
                        "nccl:_all_gather_base", "nccl:all_gather", "nccl:_reduce_scatter_base", "nccl:reduce_scatter"})
    if (op == o || op.rfind(std::string(o) + "_", 0) == 0) return true;
  return false;
}

std::vector<Finding> one_dump(const FrDump& d) {
  std::vector<Finding> out;
  const FrEntry* oldest = nullptr;
  const size_t in_flight = d.in_flight();
  for (const auto& e : d.entries)
    if (e.in_flight() && (!oldest || e.created_ns < oldest->created_ns)) oldest = &e;
  const std::string who = d.rank >= 0 ? fmt::format("rank {}", d.rank) : std::string("this rank");
  if (in_flight > 0)
    out.push_back(make(
        "nccl-fr-in-flight", Severity::warn,
        fmt::format("{} had {} collective{} in flight when the dump was written; the oldest: {} in {} ({})", who,
                    in_flight, in_flight == 1 ? "" : "s", call_text(*oldest), group_name(*oldest), oldest->state),
        {{"in_flight", std::to_string(in_flight)},
         {"oldest", call_text(*oldest)},
         {"group", oldest->group},
         {"timeout_ms", std::to_string(oldest->timeout_ms)}},
        "Give every rank's dump at once (a folder of them, or all the files): the ranks compared show which one never "
        "joined"));
  else
    out.push_back(make("nccl-fr-in-flight", Severity::info,
                       fmt::format("{}: nothing in flight ({} entries, all completed)", who, d.entries.size()),
                       {{"entries", std::to_string(d.entries.size())}}, ""));
  return out;
}

}  // namespace

std::string_view last_number_in_name(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  return name.substr(begin, end - begin);
}

bool looks_like_flight_recorder(std::string_view bytes) {
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x80 && bytes[1] >= 2 && bytes[1] <= 5) return true;
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || bytes[first] != '{') return false;
  // The JSON form sorts its keys (comm_lib_version, entries, pg_config, pg_status, version): in a long dump only the
  // first ones are near the start.
  const auto head = bytes.substr(first, 4096);
  auto has = [&](std::string_view key) { return head.find(key) != std::string_view::npos; };
  return has("\"pg_config\"") || has("\"comm_lib_version\"") || has("\"nccl_version\"") ||
         (has("\"entries\"") && (has("\"collective_seq_id\"") || has("\"profiling_name\"")));
}

FrDump parse_flight_recorder(std::string_view bytes, const std::string& origin) {
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80)
    return dump_of(as_json(parse_pickle(bytes, origin)), origin);
  return dump_of(parse_any_json(std::string(bytes), origin), origin);
}

std::vector<Finding> flight_recorder_findings(const std::vector<FrDump>& dumps) {
  if (dumps.size() == 1) return one_dump(dumps.front());
  std::vector<Finding> out;
  std::map<int, const FrDump*> by_rank;
  size_t unranked = 0;  // no rank in the file name, or a second file of one rank: not compared
  for (const auto& d : dumps)
    if (d.rank < 0 || !by_rank.emplace(d.rank, &d).second) ++unranked;
  // Every group's members, from any dump that has it in pg_config.
  std::map<std::string, FrDump::Group> groups;
  for (const auto& d : dumps)
    for (const auto& [name, g] : d.groups)
      if (groups[name].ranks.empty()) groups[name] = g;
  // Per group where some members are behind: those ranks, and what the others issued that they did not.
  std::vector<std::pair<std::set<int>, std::string>> lagging;
  std::set<int> no_dump;
  size_t compared = 0;
  for (const auto& [name, g] : groups) {
    std::vector<int> present;
    for (int r : g.ranks)
      if (by_rank.contains(r))
        present.push_back(r);
      else
        no_dump.insert(r);
    if (present.size() < 2) continue;
    ++compared;
    // Each member's collectives of this group, by sequence number.
    std::map<int, std::map<int64_t, const FrEntry*>> issued;
    bool any_in_flight = false;
    for (int r : present)
      for (const auto& e : by_rank[r]->entries)
        if (e.group == name && !e.p2p && e.seq >= 0) {
          issued[r][e.seq] = &e;
          any_in_flight = any_in_flight || !e.completed();
        }
    // The same sequence number, different collectives: a program that called them in different orders.
    std::map<int64_t, std::map<int, const FrEntry*>> at_seq;
    for (const auto& [r, calls] : issued)
      for (const auto& [seq, e] : calls) at_seq[seq][r] = e;
    for (const auto& [seq, calls] : at_seq) {
      std::map<std::string, std::set<int>> kinds;
      for (const auto& [r, e] : calls) {
        const bool sized = sizes_must_match(e->op);
        kinds[fmt::format("{}{}{}", e->op, sized ? " " + e->input_sizes : "", " " + e->input_dtypes)].insert(r);
      }
      if (kinds.size() < 2) continue;
      std::string what;
      for (const auto& [k, rs] : kinds)
        what += fmt::format("{}rank{} {}: {}", what.empty() ? "" : "; ", rs.size() > 1 ? "s" : "", ranks_text(rs), k);
      const auto* e = calls.begin()->second;
      out.push_back(
          make("nccl-collective-mismatch", Severity::fail,
               fmt::format("{}: the ranks issued different collectives at #{}: {}", group_name(*e), seq, what),
               {{"group", name}, {"seq", std::to_string(seq)}, {"calls", what}},
               error_kind("collective-mismatch").first_try));
      break;  // the first one: the later ones follow from it
    }
    if (!any_in_flight) continue;
    // Behind: issued fewer collectives of the group than the others, or none while the others wait in one.
    auto last_issued = [&](int r) {  // -1: none of the group's entries
      const auto it = issued.find(r);
      return it == issued.end() ? int64_t{-1} : it->second.rbegin()->first;
    };
    int64_t top = -1;
    for (const auto& [r, calls] : issued) top = std::max(top, calls.rbegin()->first);
    std::set<int> behind;
    int64_t first_missed = top;
    for (int r : present) {
      const int64_t last = last_issued(r);
      if (last < top) {
        behind.insert(r);
        if (last >= 0) first_missed = std::min(first_missed, last + 1);
      }
    }
    if (behind.empty()) continue;
    // What the others issued at the first number a lagging rank missed.
    const FrEntry* waited = nullptr;
    for (const auto& [r, calls] : issued)
      if (!behind.contains(r))
        if (const auto c = calls.lower_bound(first_missed); c != calls.end() && (!waited || c->first < waited->seq))
          waited = c->second;
    std::string lasts;
    for (int r : behind)
      lasts += fmt::format("{}rank {} {}", lasts.empty() ? "" : ", ", r,
                           last_issued(r) < 0 ? std::string("none of the group's in flight")
                                              : fmt::format("last issued #{}", last_issued(r)));
    lagging.emplace_back(
        behind, fmt::format("{}: {} ({}; {} of {} members with a dump)", waited ? group_name(*waited) : "group " + name,
                            waited ? call_text(*waited) : "a later collective", lasts, present.size(), g.ranks.size()));
  }
  // One finding for the job: a rank that stopped issuing lags in every group it is a member of; the groups where most
  // of the lagging ranks are behind together come first.
  if (!lagging.empty()) {
    std::set<int> ranks;
    for (const auto& [rs, text] : lagging) ranks.insert(rs.begin(), rs.end());
    std::stable_sort(lagging.begin(), lagging.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    std::string where;
    for (size_t i = 0; i < lagging.size() && i < 4; ++i) where += (i ? "; " : "") + lagging[i].second;
    if (lagging.size() > 4) where += fmt::format("; and {} more group(s)", lagging.size() - 4);
    out.push_back(make("nccl-lagging-rank", Severity::fail,
                       fmt::format("Rank{} {} never issued collectives the other members wait in ({} group{}): {}",
                                   ranks.size() > 1 ? "s" : "", ranks_text(ranks), lagging.size(),
                                   lagging.size() > 1 ? "s" : "", where),
                       {{"ranks", ranks_text(ranks)}, {"groups", std::to_string(lagging.size())}, {"where", where}},
                       error_kind("lagging-rank").first_try));
  }
  // Every member issued it and none completed: the hang is inside the collective.
  if (lagging.empty()) {
    const FrEntry* oldest = nullptr;
    std::set<int> ranks;
    for (const auto& d : dumps)
      for (const auto& e : d.entries)
        if (e.in_flight() && !e.p2p) {
          if (!oldest || e.created_ns < oldest->created_ns) oldest = &e;
          if (d.rank >= 0) ranks.insert(d.rank);
        }
    if (oldest)
      out.push_back(make(
          "nccl-fr-in-flight", no_dump.empty() ? Severity::fail : Severity::warn,
          fmt::format("Every rank with a dump issued {} in {} and it never completed on rank{} {}: the hang is inside "
                      "the collective (the network, a GPU fault), not a rank that never joined{}",
                      call_text(*oldest), group_name(*oldest), ranks.size() > 1 ? "s" : "", ranks_text(ranks),
                      no_dump.empty() ? "" : " — unless it is one of the ranks without a dump"),
          {{"oldest", call_text(*oldest)}, {"group", oldest->group}, {"ranks", ranks_text(ranks)}},
          "Read the NCCL WARN lines and the kernel log (dmesg: Xid) of those ranks' hosts; NCCL_DEBUG=INFO shows the "
          "transport of each channel"));
  }
  out.push_back(make(
      "nccl-fr-ranks", Severity::info,
      fmt::format(
          "{} dumps compared over {} process group{}{}{}", dumps.size() - unranked, compared, compared == 1 ? "" : "s",
          no_dump.empty() ? ""
                          : fmt::format("; no dump from rank{} {}", no_dump.size() > 1 ? "s" : "", ranks_text(no_dump)),
          unranked == 0 ? ""
                        : fmt::format("; {} file{} left out: no rank in the name, or a rank given twice", unranked,
                                      unranked == 1 ? "" : "s")),
      {{"dumps", std::to_string(dumps.size())},
       {"groups_compared", std::to_string(compared)},
       {"ranks_without_dump", ranks_text(no_dump)}},
      no_dump.empty() ? "" : "Collect the missing ranks' dumps: a rank that wrote none may be the one that hung"));
  return out;
}

nlohmann::json to_json(const FrDump& d, const std::vector<Finding>& findings) {
  nlohmann::json j{{"schema", kFlightRecorderSchema},
                   {"origin", d.origin},
                   {"rank", d.rank},
                   {"version", d.version},
                   {"comm_lib_version", d.comm_lib_version},
                   {"groups", d.groups.size()},
                   {"entries", d.entries.size()},
                   {"in_flight", d.in_flight()},
                   {"lines_read", d.entries.size() + d.groups.size()}};
  j["findings"] = findings;
  return j;
}

}  // namespace gsq::topo
