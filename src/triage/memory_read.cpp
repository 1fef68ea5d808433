// An allocator snapshot's pickle → MemorySnapshot (see memory.hpp): segments, blocks, trace entries, settings.
#include "triage/memory.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#include <string_view>

namespace gsq::triage {

namespace {

uint64_t non_negative(const PyValue& d, std::string_view key, uint64_t fallback = 0) {
  const int64_t v = d.int_or(key, static_cast<int64_t>(fallback));
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

bool is_torch_internal(std::string_view file) {
  return file.find("/torch/") != std::string_view::npos || file.find("\\torch\\") != std::string_view::npos ||
         file.empty() || file.front() == '?' || !(file.ends_with(".py") || file.ends_with(".pyx"));
}

// The two last components of a path: enough to recognise a file, short enough for a table.
std::string_view short_path(std::string_view file) {
  const size_t last = file.find_last_of("/\\");
  if (last == std::string_view::npos || last == 0) return file;
  const size_t prev = file.find_last_of("/\\", last - 1);
  return prev == std::string_view::npos ? file : file.substr(prev + 1);
}

// The allocator's and the dispatcher's own C++ frames, which every allocation has (snapshots recorded with
// context="all" or stacks="cpp"): never a site.
bool is_plumbing(std::string_view name) {
  for (std::string_view p : {"torch::unwind::", "torch::CapturedTraceback::", "gather_with_cpp", "CUDACachingAllocator",
                             "at::detail::empty", "at::native::empty", "at::_ops::", "c10::impl::", "at::(anonymous",
                             "at::TensorBase at::detail::", "at::native::new_", "at::Tensor::new_"})
    if (name.find(p) != std::string_view::npos) return true;
  return false;
}

// The first frame outside PyTorch's own Python and C++ code. An allocation with no such Python frame happened in C++
// alone — autograd's backward thread, mostly: it is named by the autograd node that made it ("backward:
// BmmBackward0"), else by its first C++ frame that is not allocator or dispatcher plumbing, else the first frame.
std::string site_of(const PyList& frames) {
  const PyValue* first = nullptr;
  for (const auto& f : frames) {
    if (!f.is(PyValue::Type::dict)) continue;
    if (!first) first = &f;
    const PyValue* file = f.get("filename");
    if (file && file->is(PyValue::Type::string) && !is_torch_internal(*file->text))
      return fmt::format("{} ({}:{})", f.str_or("name", "?"), short_path(*file->text), f.int_or("line", 0));
  }
  if (!first) return "";
  const PyValue* cpp = nullptr;
  for (const auto& f : frames) {
    if (!f.is(PyValue::Type::dict)) continue;
    const std::string name = f.str_or("name", "");
    // torch::autograd::generated::BmmBackward0::apply(...) → BmmBackward0
    if (const size_t g = name.find("autograd::generated::"); g != std::string::npos) {
      const size_t from = g + 21, to = name.find("::", from);
      return "backward: " + name.substr(from, to == std::string::npos ? std::string::npos : to - from);
    }
    if (name.find("AccumulateGrad") != std::string::npos) return "backward: AccumulateGrad";
    if (name.find("torch::autograd::Engine::") != std::string::npos) return "backward (autograd engine)";
    if (!cpp && !name.empty() && !is_plumbing(name)) cpp = &f;
  }
  const PyValue* pick = cpp ? cpp : first;
  return fmt::format("{} ({}:{})", pick->str_or("name", "?"), short_path(pick->str_or("filename", "?")),
                     pick->int_or("line", 0));
}

BlockState state_of(const std::string& s, const std::string& origin) {
  if (s == "active_allocated") return BlockState::active;
  if (s == "active_pending_free" || s == "active_awaiting_free") return BlockState::awaiting_free;
  if (s == "inactive") return BlockState::inactive;
  throw_bad_input(fmt::format("{}: a block with the unknown state '{}'", origin, s));
}

nlohmann::json to_json_value(const PyValue& v, int depth = 0) {
  if (depth > 8) return "…";
  switch (v.type) {
    case PyValue::Type::none:
      return nullptr;
    case PyValue::Type::boolean:
      return v.boolean;
    case PyValue::Type::integer:
      return v.integer;
    case PyValue::Type::floating:
      return v.floating;
    case PyValue::Type::string:
      return *v.text;
    case PyValue::Type::bytes:
      return fmt::format("<{} bytes>", v.text->size());
    case PyValue::Type::list:
    case PyValue::Type::tuple: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& x : *v.items) a.push_back(to_json_value(x, depth + 1));
      return a;
    }
    case PyValue::Type::dict: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [k, x] : *v.entries)
        o[k.is(PyValue::Type::string) ? *k.text : to_json_value(k, depth + 1).dump()] = to_json_value(x, depth + 1);
      return o;
    }
  }
  return nullptr;
}

MemBlock read_block(const PyValue& b, const std::string& origin, bool& legacy) {
  MemBlock m;
  m.address = non_negative(b, "address");
  m.size = non_negative(b, "size");
  m.state = state_of(b.str_or("state", "inactive"), origin);
  if (const PyValue* req = b.get("requested_size"); req && req->is(PyValue::Type::integer)) {
    m.requested = req->integer < 0 ? 0 : static_cast<uint64_t>(req->integer);
  } else if (const auto& hist = b.list_or_empty("history"); !hist.empty()) {
    // Legacy snapshots: the live tensor's size is the last history entry's real_size.
    legacy = true;
    m.requested = non_negative(hist.back(), "real_size", m.size);
    m.site = site_of(hist.back().list_or_empty("frames"));
  } else {
    m.requested = m.state == BlockState::active ? m.size : 0;
  }
  if (m.site.empty()) m.site = site_of(b.list_or_empty("frames"));
  if (m.state != BlockState::active) m.requested = 0;
  m.requested = std::min(m.requested, m.size);
  return m;
}

}  // namespace

MemorySnapshot memory_snapshot_from(const PyValue& root, const std::string& origin) {
  MemorySnapshot s;
  s.origin = origin;
  const PyList* segments = nullptr;
  if (root.is(PyValue::Type::dict)) {
    const PyValue* segs = root.get("segments");
    if (!segs || !segs->is_sequence())
      throw_bad_input(
          fmt::format("{}: a dict without a 'segments' list: not a PyTorch allocator snapshot "
                      "(torch.cuda.memory._dump_snapshot)",
                      origin));
    segments = segs->items.get();
  } else if (root.is_sequence()) {
    segments = root.items.get();  // the oldest snapshots were the segment list alone
  } else {
    throw_bad_input(fmt::format("{}: the pickle holds a {}, not an allocator snapshot", origin, root.type_name()));
  }
  bool legacy = false;
  for (const auto& seg : *segments) {
    if (!seg.is(PyValue::Type::dict) || !seg.get("total_size"))
      throw_bad_input(fmt::format("{}: a segment that is not a dict with 'total_size'", origin));
    MemSegment m;
    m.device = static_cast<int>(seg.int_or("device", 0));
    m.address = non_negative(seg, "address");
    m.total = non_negative(seg, "total_size");
    m.stream = seg.int_or("stream", 0);
    m.type = seg.str_or("segment_type", "large");
    m.expandable = seg.int_or("is_expandable", 0) != 0;
    if (const PyValue* pool = seg.get("segment_pool_id"); pool && pool->is_sequence())
      for (const auto& x : *pool->items) m.private_pool = m.private_pool || (x.is(PyValue::Type::integer) && x.integer);
    for (const auto& b : seg.list_or_empty("blocks")) {
      if (!b.is(PyValue::Type::dict)) throw_bad_input(fmt::format("{}: a block that is not a dict", origin));
      m.blocks.push_back(read_block(b, origin, legacy));
    }
    s.segments.push_back(std::move(m));
  }
  s.format = legacy ? "legacy (blocks with history)" : "current (blocks with requested_size and frames)";
  if (root.is(PyValue::Type::dict)) {
    const auto& traces = root.list_or_empty("device_traces");
    for (size_t d = 0; d < traces.size(); ++d) {
      if (!traces[d].is_sequence()) continue;
      for (const auto& e : *traces[d].items) {
        if (!e.is(PyValue::Type::dict)) continue;
        TraceEvent t;
        t.device = static_cast<int>(d);
        t.action = e.str_or("action", "");
        t.address = non_negative(e, "addr");
        t.size = non_negative(e, "size");
        t.stream = e.int_or("stream", 0);
        if (e.get("device_free")) t.device_free = non_negative(e, "device_free");
        if (const PyValue* tu = e.get("time_us"); tu && tu->is(PyValue::Type::integer))
          t.time_us = static_cast<double>(tu->integer);
        if (t.action == "alloc") t.site = site_of(e.list_or_empty("frames"));
        s.trace.push_back(std::move(t));
      }
    }
    if (const PyValue* settings = root.get("allocator_settings")) s.allocator_settings = to_json_value(*settings);
  }
  return s;
}

MemorySnapshot parse_memory_snapshot(const std::string& bytes, const std::string& origin) {
  if (bytes.empty()) throw_bad_input(fmt::format("{}: empty file", origin));
  return memory_snapshot_from(parse_pickle(bytes, origin), origin);
}

MemorySnapshot read_memory_snapshot(const std::filesystem::path& file) {
  // a folder, a missing or unreadable file: bad input, said as such
  return parse_memory_snapshot(read_text_file(file), file.string());
}

}  // namespace gsq::triage
