// CUDA out-of-memory messages read and judged (see oom.hpp). The wordings are PyTorch's
// c10/cuda/CUDACachingAllocator.cpp (the message it raises as torch.OutOfMemoryError); the judgement is arithmetic on
// its figures, checked against the OOM corpus (tests/data/oom/, bench/triage/oom_corpus.py).
#include "triage/oom.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

namespace gsq::triage {

namespace {

constexpr double kGiB = 1ull << 30;
constexpr size_t kMaxMessages = 1000;
constexpr size_t kWindow = 2000;  // characters after "Tried to allocate" that one message's figures lie in
// vLLM's own memory failures at start-up: its free-memory check, and a KV cache left no block.
constexpr std::string_view kVllmStartup = "on startup is less than desired GPU memory utilization";
constexpr std::string_view kNoCacheBlocks = "No available memory for the cache blocks";
// XLA's allocator (JAX, TensorFlow with XLA): "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4770354232
// bytes." and, when the program's buffers are at fault, its "BufferAssignment stats: … total allocation: 14.44GiB".
constexpr std::string_view kXla = "Out of memory while trying to allocate";
// TensorRT's builder and runtime: "Error Code 2: OutOfMemory (no further information)", "Requested amount of GPU
// memory (N bytes) could not be allocated".
constexpr std::string_view kTrtOom = "OutOfMemory (", kTrtRequested = "Requested amount of GPU memory";

// "20.00 MiB", "1.5 GiB", "0 bytes" → bytes.
double bytes_of(const std::string& number, const std::string& unit) {
  double v = 0;
  try {
    v = std::stod(number);
  } catch (const std::exception&) {
    return 0;
  }
  static const std::map<std::string, double> scale = {{"bytes", 1},    {"B", 1},
                                                      {"KiB", 1024.0}, {"MiB", 1024.0 * 1024},
                                                      {"GiB", kGiB},   {"TiB", kGiB * 1024},
                                                      {"KB", 1e3},     {"MB", 1e6},
                                                      {"GB", 1e9},     {"TB", 1e12}};
  const auto s = scale.find(unit);
  return s == scale.end() ? 0 : v * s->second;
}

const std::string kSize = R"(([0-9]+(?:\.[0-9]+)?) ?(bytes|[KMGT]i?B|B)\b)";

// The size `re` (a kSize pattern before a word) finds in w.
std::optional<double> size_in(const std::string& w, const std::regex& re) {
  std::smatch m;
  if (std::regex_search(w, m, re)) return bytes_of(m[1], m[2]);
  return std::nullopt;
}

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / kGiB);
}

OomMessage parse_message(const std::string& w) {
  OomMessage m;
  std::smatch s;
  static const std::regex tried("Tried to allocate " + kSize);
  if (std::regex_search(w, s, tried)) m.tried = bytes_of(s[1], s[2]);
  static const std::regex gpu(R"(\(GPU ([0-9]+);|GPU ([0-9]+) has a total capac)");
  if (std::regex_search(w, s, gpu)) m.gpu = std::stoi(s[1].matched ? s[1].str() : s[2].str());
  // PyTorch 2.1.0 printed "total capacty of" (sic); a paste rejoining wrapped lines can lose the space at the join
  // ("total capacityof 23.64 GiB", the OOM corpus's latentsync278).
  static const std::regex modern("total capac(?:i)?ty ?of ?" + kSize + " ?of which ?" + kSize + " ?is free");
  if (std::regex_search(w, s, modern)) {
    m.wording = "2.1+";
    m.capacity = bytes_of(s[1], s[2]);
    m.free = bytes_of(s[3], s[4]);
    static const std::regex split("Of the allocated memory " + kSize + " is allocated by PyTorch, and " + kSize +
                                  " is reserved by PyTorch but unallocated");
    if (std::regex_search(w, s, split)) {
      m.allocated = bytes_of(s[1], s[2]);
      m.reserved_unallocated = bytes_of(s[3], s[4]);
      m.reserved = *m.allocated + *m.reserved_unallocated;
    }
    static const std::regex self("this process has " + kSize + " memory in use");
    if (std::regex_search(w, s, self)) m.this_process = bytes_of(s[1], s[2]);
    static const std::regex proc("Process ([0-9]+) has " + kSize + " memory in use");
    for (auto it = std::sregex_iterator(w.begin(), w.end(), proc); it != std::sregex_iterator(); ++it)
      if (m.processes.size() < 64) m.processes.emplace_back((*it)[1], bytes_of((*it)[2], (*it)[3]));
  } else {
    m.wording = "before-2.1";
    // Each pattern compiled once (a log may hold a thousand messages).
    static const std::regex capacity(kSize + " total capacity"), allocated(kSize + " already allocated"),
        free(kSize + " free"), reserved(kSize + " reserved in total by PyTorch"), cached(kSize + " cached");
    m.capacity = size_in(w, capacity);
    m.allocated = size_in(w, allocated);
    m.free = size_in(w, free);
    m.reserved = size_in(w, reserved);
    if (m.reserved && m.allocated) m.reserved_unallocated = std::max(0.0, *m.reserved - *m.allocated);
    // PyTorch ≤ 1.3: "… Z free; W cached)", W the cache's free bytes (reserved − allocated).
    if (!m.reserved && m.allocated)
      if (const auto c = size_in(w, cached)) {
        m.reserved_unallocated = *c;
        m.reserved = *m.allocated + *c;
      }
  }
  return m;
}

// PyTorch's cudaMallocAsync backend (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, CUDAMallocAsyncAllocator.cpp):
// "Allocation on device 0 would exceed allowed memory. (out of memory) Currently allocated : X Requested : Y Device
// limit : Z Free (according to CUDA): W …", a figure per line. Its pool's free bytes are not given: the cache's free
// bytes stay unknown and what PyTorch holds is taken as its allocated bytes.
OomMessage parse_async_message(const std::string& w) {
  OomMessage m;
  m.wording = "cudaMallocAsync";
  std::smatch s;
  static const std::regex gpu(R"(Allocation on device ([0-9]+))");
  if (std::regex_search(w, s, gpu)) m.gpu = std::stoi(s[1].str());
  static const std::regex allocated("Currently allocated +: " + kSize), requested("Requested +: " + kSize),
      limit("Device limit +: " + kSize), free(R"(Free \(according to CUDA\) *: )" + kSize);
  if (std::regex_search(w, s, requested)) m.tried = bytes_of(s[1], s[2]);
  if (std::regex_search(w, s, allocated)) m.allocated = m.reserved = bytes_of(s[1], s[2]);
  if (std::regex_search(w, s, limit)) m.capacity = bytes_of(s[1], s[2]);
  if (std::regex_search(w, s, free)) m.free = bytes_of(s[1], s[2]);
  return m;
}

// vLLM's start-up check (vllm/v1/worker/utils.py request_memory): "Free memory on device cuda:1 (19.77/22.05 GiB) on
// startup is less than desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU
// memory used by other processes." The engine has loaded nothing yet: what is not free is held outside it.
OomMessage parse_vllm_startup(const std::string& w) {
  OomMessage m;
  m.wording = "vllm-startup";
  std::smatch s;
  static const std::regex re(R"(Free memory on device (?:cuda:)?([0-9]+) \(([0-9.]+)/([0-9.]+) GiB\) on startup is )"
                             R"(less than desired GPU memory utilization \(([0-9.]+), ([0-9.]+) GiB\))");
  if (!std::regex_search(w, s, re)) return m;
  try {
    m.gpu = std::stoi(s[1].str());
    m.free = std::stod(s[2].str()) * kGiB;
    m.capacity = std::stod(s[3].str()) * kGiB;
    m.utilization = std::stod(s[4].str());
    m.tried = std::stod(s[5].str()) * kGiB;
  } catch (const std::exception&) {
    m.tried = 0;
  }
  return m;
}

OomMessage parse_xla_message(const std::string& w) {
  OomMessage m;
  m.wording = "xla";
  std::smatch s;
  static const std::regex tried(R"(Out of memory while trying to allocate ([0-9]+) bytes)");
  if (std::regex_search(w, s, tried)) m.tried = bytes_of(s[1], "bytes");
  // The program's own buffers (the BufferAssignment dump): what it needs, whatever else is on the GPU.
  static const std::regex total("total allocation: *" + kSize);
  if (std::regex_search(w, s, total)) m.allocated = bytes_of(s[1], s[2]);
  return m;
}

// Words of an out-of-memory failure that carry no allocator figures (CUDA's, PyTorch's exception name, vLLM's KV cache,
// TensorRT's): a line with them and no message read is a bare OOM.
bool says_out_of_memory(std::string_view s) {
  return s.find("out of memory") != std::string_view::npos || s.find("OutOfMemoryError") != std::string_view::npos ||
         s.find(kNoCacheBlocks) != std::string_view::npos || s.find(kTrtOom) != std::string_view::npos ||
         s.find(kTrtRequested) != std::string_view::npos;
}

// What one message says held the memory: its causes, the first the one that decides.
struct Verdict {
  std::string cls, title, fix;
};

// The memory other processes held: from PyTorch 2.1+'s list of processes where it names this one (the entry equal to
// "this process has …", or the only entry), else what lies outside PyTorch's segments less one process's context and
// libraries.
// "This process has M memory in use" is the driver's count for the process (NVML), which holds at least what PyTorch
// reserved; a smaller one ("0 bytes" where NVML cannot see the process: WSL, a container without its PID namespace)
// says nothing of this process, and the rest of the GPU is not another's for it.
std::optional<double> this_process_seen(const OomMessage& m) {
  if (m.this_process && m.reserved && *m.this_process + 0.01 * kGiB < *m.reserved) return std::nullopt;
  return m.this_process;
}

double others_of(const OomMessage& m) {
  const auto self = this_process_seen(m);
  if (!m.processes.empty()) {
    const auto is_self = [&](double bytes) {
      return self ? std::abs(bytes - *self) <= 0.01 * kGiB : m.processes.size() == 1;
    };
    size_t selves = 0;
    double others = 0;
    for (const auto& [pid, bytes] : m.processes) {
      if (is_self(bytes) && selves == 0) {
        ++selves;
        continue;
      }
      others += bytes;
    }
    if (selves == 1) return others;
  }
  if (self && m.capacity && m.free) return std::max(0.0, *m.capacity - *m.free - *self);
  const auto outside = m.outside_pytorch();
  return outside ? std::max(0.0, *outside - kContextAllowanceBytes) : 0;
}

const char* kFragmentationFix =
    "The caching allocator held enough free memory, in pieces none of which fits the request: set "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch ≥ 2.1: segments grow in place instead of splitting), or "
    "max_split_size_mb:<MiB> before that. Requests of changing sizes cause it (variable sequence lengths or "
    "resolutions: pad to a few bucket sizes); torch.cuda.empty_cache() between phases returns whole free segments only";
const char* kOthersFix =
    "See who holds it: nvidia-smi --query-compute-apps=pid,used_memory --format=csv. A leftover process of an earlier "
    "run: end it. Several ranks or test workers on GPU 0: torch.cuda.set_device(local_rank) before the first CUDA call "
    "(or CUDA_VISIBLE_DEVICES per process). A server or framework that preallocates (vLLM's gpu_memory_utilization, "
    "TensorFlow's and JAX's default pools: XLA_PYTHON_CLIENT_PREALLOCATE=false) leaves the rest less than it seems; "
    "a desktop's display takes some of a workstation card";
const char* kTooLargeFix =
    "Needs less memory or more GPUs. Training: a smaller micro-batch with gradient accumulation, activation "
    "checkpointing, bf16 autocast, an 8-bit or fused optimizer, sharding (FSDP, ZeRO) or offload. Inference: "
    "torch.inference_mode(), a shorter context or batch, quantised weights. If it ran for many steps first, memory "
    "grew: compare two snapshots (gpusqueeze memory a.pickle b.pickle) for the sites that grow";

// Every cause the figures support, the deciding one first (Severity::fail), the others after it (warn): a share of
// the GPU below kMaterialShare freed by fixing a cause is the last straw on a full GPU, not the cause.
std::vector<std::pair<Verdict, bool>> judge(const OomMessage& m) {
  if (m.wording == "xla")
    return {
        {Verdict{"oom-too-large",
                 m.allocated ? fmt::format("XLA ran out of memory asking {}: the compiled program's buffers need {} "
                                           "(its BufferAssignment), more than the GPU gives it",
                                           gib(m.tried), gib(*m.allocated))
                             : fmt::format("XLA ran out of memory asking {}; the message has no figure for what "
                                           "else held the GPU",
                                           gib(m.tried)),
                 std::string("Make the program smaller on the device: a smaller batch or sequence, "
                             "rematerialisation (jax.checkpoint / remat), bf16, sharding over more devices. JAX "
                             "preallocates 75% of the GPU per process: where two processes (or JAX beside "
                             "PyTorch/TensorFlow) share a GPU, XLA_PYTHON_CLIENT_PREALLOCATE=false or "
                             "XLA_PYTHON_CLIENT_MEM_FRACTION for each; nvidia-smi shows who holds it")},
         true}};
  if (m.wording == "vllm-startup" && m.capacity && m.free) {
    const double held = *m.capacity - *m.free, u = m.utilization.value_or(0);
    return {{Verdict{"oom-other-process",
                     fmt::format("vLLM's start-up check: {} of the GPU's {} is free, and gpu_memory_utilization {:.2f} "
                                 "asks {}; {} is held before the engine loads anything (other processes, another "
                                 "engine or stage on this GPU, CUDA contexts)",
                                 gib(*m.free), gib(*m.capacity), u, gib(m.tried), gib(held)),
                     fmt::format("The utilization is a share of the whole GPU, not of what is free: set "
                                 "gpu_memory_utilization to at most {:.2f} (the free share less a margin for this "
                                 "engine's own context), or free what holds the {} (nvidia-smi "
                                 "--query-compute-apps=pid,used_memory --format=csv: a leftover server, a colocated "
                                 "trainer, a second engine or stage started at the same time — give engines sharing a "
                                 "GPU utilizations that sum below 1)",
                                 std::max(0.0, std::floor(100 * (*m.free / *m.capacity - 0.03)) / 100), gib(held))},
             true}};
  }
  // A message cut before the GPU's figures ("Tried to allocate 642.00 MiB. GPU" and no more): nothing in it says what
  // held the memory. Said so, with the cause most pasted errors have (a workload too large: 47 of the OOM corpus's 79,
  // tests/data/oom) as the likeliest, not as a finding of the figures.
  if (!m.capacity && !m.allocated && !m.reserved)
    return {{Verdict{"oom-too-large",
                     fmt::format("Out of memory asking {}; the message stops before the GPU's figures (capacity, free, "
                                 "what PyTorch holds), so what held the memory cannot be told from it: most likely a "
                                 "workload that does not fit (the commonest cause of pasted errors), not shown here",
                                 gib(m.tried)),
                     std::string("Paste the whole message: its figures tell a workload that does not fit from a "
                                 "fragmented cache or another process (nvidia-smi --query-compute-apps=pid,used_memory "
                                 "--format=csv for other processes; torch.cuda.memory_summary() at the failure for "
                                 "the cache). ") +
                         kTooLargeFix},
             true}};
  const double tried = m.tried, free = m.free.value_or(0), cache = m.reserved_unallocated.value_or(0);
  const double capacity = m.capacity.value_or(0), others = others_of(m);
  const double material = kMaterialShare * capacity;
  // Would it have fitted had the cache's free bytes been one piece, or had the others not been there?
  // Fragmentation: the cache's free bytes with the device's would have held the request (expandable segments map the
  // device's free pages onto a segment's; the device's alone fall short of a new segment, itself rounded up), and the
  // cache holds a material share beside the live tensors — PyTorch's own hint, "reserved memory is >> allocated
  // memory", at kFragmentedShare.
  const double allocated = m.allocated.value_or(0);
  // A request larger than the GPU fits no arrangement of the cache and no GPU emptied of other processes: the
  // workload asks too much, whatever the cache's figures say (reported beside the GPU's own: unified or shared memory).
  const bool beyond = capacity > 0 && tried > capacity;
  const bool frag_fits = !beyond && cache > 0 && cache + free >= tried;
  const bool frag = frag_fits && cache >= kFragmentedShare * allocated && cache >= material;
  const bool other_fits = !beyond && others >= 0.5 * tried && others + free >= tried;
  const bool other = other_fits && others >= material;
  const bool huge = capacity > 0 && tried >= kHugeShare * capacity;
  const bool full = capacity > 0 && m.allocated && *m.allocated >= 0.5 * capacity;
  Verdict f{"oom-fragmentation",
            fmt::format("Out of memory with {} free inside PyTorch's cache: fragmentation (asked {})", gib(cache),
                        gib(tried)),
            kFragmentationFix};
  Verdict o{"oom-other-process",
            fmt::format("Out of memory with {} of the GPU held by other processes or outside this process's PyTorch "
                        "(asked {})",
                        gib(others), gib(tried)),
            kOthersFix};
  Verdict t{"oom-too-large",
            fmt::format("Out of memory: PyTorch's tensors hold {} of the GPU's {} (asked {})",
                        gib(m.allocated.value_or(0)), gib(capacity), gib(tried)),
            kTooLargeFix};
  if (huge) {
    t.title += fmt::format("; one allocation of {:.0f}% of the GPU", 100 * tried / capacity);
    t.fix = std::string(
                "One tensor that large is the first suspect: attention scores materialised (eager attention "
                "at a long sequence: use scaled_dot_product_attention), fp32 logits over a large vocabulary, "
                "a whole batch or image at once (tiling, VAE slicing, chunking). ") +
            kTooLargeFix;
  }
  std::vector<std::pair<Verdict, bool>> out;
  if (frag && (!other || cache >= others)) {
    out.push_back({f, true});
    if (other) out.push_back({o, false});
  } else if (other) {
    out.push_back({o, true});
    if (frag) out.push_back({f, false});
  }
  if (out.empty()) {
    out.push_back({t, true});
    // The cache's free pieces would have held this request, but they are too little of the GPU to be the cause (the
    // next request fails instead: the last straw on a full GPU).
    if (frag_fits) {
      f.title = fmt::format(
          "{} free inside PyTorch's cache would have held this request ({}) as one piece: "
          "expandable_segments:True may let it through, with {:.1f}% of the GPU to spare",
          gib(cache), gib(tried), 100 * (cache + free - tried) / std::max(capacity, 1.0));
      out.push_back({f, false});
    }
    // Likewise memory others hold, too little of the GPU to be the cause.
    if (other_fits) {
      o.title = fmt::format(
          "{} of the GPU held outside this process's PyTorch (beyond its context and libraries) "
          "would have held this request ({}): another process (a desktop, a browser, a leftover "
          "job) may be what tips it over",
          gib(others), gib(tried));
      out.push_back({o, false});
    }
  } else if (huge || full) {
    out.push_back({t, false});
  }
  return out;
}

std::vector<Evidence> evidence_of(const OomMessage& m) {
  std::vector<Evidence> ev{{"tried", gib(m.tried)}};
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (v) ev.push_back({name, gib(*v)});
  };
  add("capacity", m.capacity);
  add("free", m.free);
  add("allocated_by_pytorch", m.allocated);
  add("reserved_unallocated", m.reserved_unallocated);
  add("outside_pytorch", m.outside_pytorch());
  if (m.capacity || !m.processes.empty()) ev.push_back({"other_processes", gib(others_of(m))});
  add("this_process", m.this_process);
  for (const auto& [pid, bytes] : m.processes) ev.push_back({"process " + pid, gib(bytes)});
  if (m.gpu) ev.push_back({"gpu", std::to_string(*m.gpu)});
  ev.push_back({"line", std::to_string(m.line)});
  ev.push_back({"wording", m.wording});
  return ev;
}

// An out-of-memory failure without the allocator's figures, judged by where it happened (the whole text: a pasted
// traceback's frames say what was allocating).
Verdict bare_cause(const std::string& text) {
  const auto has = [&](std::string_view w) { return text.find(w) != std::string::npos; };
  // vLLM's sleep mode (device_allocator/cumem.py) maps its weights and KV cache back at wake_up: what took the GPU
  // while the engine slept (the trainer of a colocated RL job) still holds it.
  if (has("cumem") && has("wake_up"))
    return {"oom-other-process",
            "vLLM's sleep-mode allocator could not map its memory back at wake_up: what used the GPU while the engine "
            "slept (a colocated trainer's weights, gradients and optimizer state) still holds it",
            "Free the other side before waking the engine (offload the trainer's parameters, gradients and optimizer "
            "state, or empty its cache), or make both fit: a smaller gpu_memory_utilization for the engine, more "
            "GPUs for it (tensor parallelism), or the engine on GPUs of its own"};
  // CUDA graph capture (torch.cuda.graph: capture_end instantiates the graph) allocates its private pool on top of
  // what the process holds; a serving engine has by then given its whole budget to the KV cache.
  if (has("capture_end") || has("torch.cuda.graph(") || has("graph capture") || has("capture_model"))
    return {"oom-too-large",
            "CUDA ran out of memory capturing a CUDA graph: the graph's pool comes on top of what this process "
            "already holds (a serving engine gives its whole memory budget to the KV cache before capturing)",
            "Leave room for the graphs: a lower gpu_memory_utilization (vLLM/SGLang: the KV cache takes the whole "
            "budget, graphs come after), fewer or smaller capture sizes (max_num_seqs, cudagraph capture sizes), or "
            "eager mode (--enforce-eager) to confirm"};
  // TensorRT building or running an engine: its tactics' workspace and activations for the shapes it was given.
  if (has(kTrtOom) || has(kTrtRequested))
    return {"oom-too-large",
            "TensorRT ran out of GPU memory building or running the engine: its workspace and activations for the "
            "shapes it was given do not fit",
            "Smaller input shapes (the optimisation profile's max), a lower builder memory-pool limit "
            "(--memPoolSize=workspace:… / config.set_memory_pool_limit), FP16/INT8, or a larger GPU; free what else "
            "holds the GPU first (nvidia-smi)"};
  // vLLM found no room for a single KV-cache block in its budget after loading the weights and profiling a forward.
  if (has(kNoCacheBlocks))
    return {"oom-too-large",
            "vLLM left no memory for the KV cache: the weights and the profiled activation peak fill its "
            "gpu_memory_utilization budget (older vLLM releases, before its per-instance accounting of PR #10511, "
            "also counted memory other processes held on the GPU against it)",
            "Raise gpu_memory_utilization if the GPU is otherwise empty, or shrink what fills the budget (a "
            "quantised or smaller model, tensor parallelism over more GPUs, smaller max_num_batched_tokens); where "
            "another engine or process shares the GPU (nvidia-smi --query-compute-apps=pid,used_memory "
            "--format=csv), older vLLM needs this engine's utilization to cover both"};
  return {"oom-outside-allocator",
          "CUDA ran out of memory without PyTorch's allocator figures: a CUDA context, a library's own allocation "
          "(cuBLAS, cuDNN, NCCL) or a kernel launch failed on a full GPU",
          "The GPU was already full when the library asked: see who holds it (nvidia-smi "
          "--query-compute-apps=pid,used_memory --format=csv) — another process, or PyTorch's own cache (leave room: "
          "torch.cuda.set_per_process_memory_fraction, or fewer cached bytes with expandable_segments:True)"};
}

}  // namespace

std::optional<double> OomMessage::outside_pytorch() const {
  if (!capacity || !free || !reserved) return std::nullopt;
  return std::max(0.0, *capacity - *free - *reserved);
}

bool looks_like_oom_text(std::string_view text) {
  if (text.empty() || static_cast<unsigned char>(text[0]) == 0x80) return false;  // a pickle opens with its protocol
  return text.find("Tried to allocate") != std::string_view::npos ||
         text.find("would exceed allowed memory") != std::string_view::npos ||
         text.find(kVllmStartup) != std::string_view::npos || text.find(kXla) != std::string_view::npos ||
         says_out_of_memory(text);
}

OomReport read_oom_text(std::string_view text, const std::string& origin) {
  OomReport r;
  r.origin = origin;
  // The lines joined by spaces (a wrapped message reads whole), with where each line starts.
  std::string joined;
  joined.reserve(text.size());
  std::vector<size_t> starts;
  size_t bare_lines = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    starts.push_back(joined.size());
    joined.append(line);
    joined.push_back(' ');
    if (says_out_of_memory(line) && line.find("Tried to allocate") == std::string_view::npos) ++bare_lines;
    if (end == text.size()) break;
    pos = end + 1;
  }
  r.lines = starts.size();
  // Every message of one wording: from each anchor (or the message's opening `lead`, just before it) up to the next
  // anchor, at most kWindow characters.
  const auto scan = [&](std::string_view anchor, std::string_view lead, auto parse) {
    for (size_t at = joined.find(anchor); at != std::string::npos && r.messages.size() < kMaxMessages;) {
      const size_t begin = lead.empty() ? std::string::npos : joined.rfind(lead, at);
      const size_t from = begin != std::string::npos && at - begin < 64 ? begin : at;
      const size_t next = joined.find(anchor, at + anchor.size());
      OomMessage m =
          parse(joined.substr(from, std::min(kWindow, (next == std::string::npos ? joined.size() : next) - from)));
      m.line = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), from) - starts.begin());
      if (m.tried > 0) r.messages.push_back(std::move(m));
      at = next;
    }
  };
  scan("Tried to allocate", "", parse_message);
  scan("would exceed allowed memory", "Allocation on device", parse_async_message);
  scan(kVllmStartup, "Free memory on device", parse_vllm_startup);
  scan(kXla, "", parse_xla_message);
  std::stable_sort(r.messages.begin(), r.messages.end(),
                   [](const OomMessage& a, const OomMessage& b) { return a.line < b.line; });
  // Lines that say "out of memory" beside a full message are its own first line ("CUDA out of memory. Tried …" is one
  // line, but "torch.OutOfMemoryError: CUDA out of memory." may wrap before it): bare only where no message was read.
  r.bare = r.messages.empty() ? bare_lines : 0;
  if (r.messages.empty() && r.bare == 0)
    throw_bad_input(fmt::format(
        "{}: no CUDA out-of-memory error in the file (PyTorch's \"CUDA out of memory. Tried to allocate …\" or "
        "CUDA's \"out of memory\" are read; an allocator snapshot is a pickle from "
        "torch.cuda.memory._dump_snapshot())",
        origin));
  const std::string source = "PyTorch's CUDACachingAllocator OOM message; judged by the OOM corpus (tests/data/oom/)";
  // One finding per cause, from its first message; the count says how many messages (ranks, retries) agree.
  std::map<std::string, std::pair<size_t, size_t>> seen;  // class → (finding index, messages)
  for (const auto& m : r.messages)
    for (const auto& [v, decides] : judge(m)) {
      if (const auto it = seen.find(v.cls); it != seen.end()) {
        ++it->second.second;
        continue;
      }
      seen[v.cls] = {r.findings.size(), 1};
      r.findings.push_back(make_finding(v.cls, decides ? Severity::fail : Severity::warn, v.title, evidence_of(m),
                                        v.fix, source, 0, m.gpu ? fmt::format("GPU {}", *m.gpu) : "GPU"));
    }
  // The deciding causes first (a cause that only contributed to one message may decide another).
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  for (const auto& [cls, v] : seen)
    if (v.second > 1) r.findings[v.first].evidence.push_back({"messages", std::to_string(v.second)});
  if (r.bare > 0) {
    const auto [cls, title, fix] = bare_cause(joined);
    r.findings.push_back(
        make_finding(cls, Severity::fail, title, {{"lines", std::to_string(r.bare)}}, fix, source, 0, "GPU"));
  }
  return r;
}

nlohmann::json to_json(const OomReport& r) {
  nlohmann::json msgs = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const auto& m : r.messages) {
    nlohmann::json procs = nlohmann::json::array();
    for (const auto& [pid, bytes] : m.processes) procs.push_back({{"pid", pid}, {"bytes", bytes}});
    msgs.push_back({{"line", m.line},
                    {"wording", m.wording},
                    {"gpu", m.gpu ? nlohmann::json(*m.gpu) : nlohmann::json(nullptr)},
                    {"tried_bytes", m.tried},
                    {"capacity_bytes", opt(m.capacity)},
                    {"free_bytes", opt(m.free)},
                    {"allocated_bytes", opt(m.allocated)},
                    {"reserved_bytes", opt(m.reserved)},
                    {"reserved_unallocated_bytes", opt(m.reserved_unallocated)},
                    {"outside_pytorch_bytes", opt(m.outside_pytorch())},
                    {"this_process_bytes", opt(m.this_process)},
                    {"processes", procs}});
  }
  return {{"schema", kOomSchema}, {"origin", r.origin},   {"lines", r.lines},
          {"messages", msgs},     {"bare_lines", r.bare}, {"findings", r.findings}};
}

Table oom_table(const OomReport& r, size_t rows) {
  Table t{{"line", "GPU", "asked", "capacity", "free", "PyTorch tensors", "PyTorch cache, free", "outside PyTorch"},
          {}};
  auto g = [](const std::optional<double>& v) { return v ? gib(*v) : std::string("-"); };
  for (size_t i = 0; i < r.messages.size() && i < rows; ++i) {
    const auto& m = r.messages[i];
    t.rows.push_back({std::to_string(m.line), m.gpu ? std::to_string(*m.gpu) : "-", gib(m.tried), g(m.capacity),
                      g(m.free), g(m.allocated), g(m.reserved_unallocated), g(m.outside_pytorch())});
  }
  return t;
}

}  // namespace gsq::triage
