// NCCL logs, nccl-tests tables and PyTorch distributed messages (see nccl_logs.hpp).
#include "topo/nccl_logs.hpp"

#include "core/error.hpp"
#include "topo/log_framing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <regex>
#include <sstream>

namespace gsq::topo {

namespace {

// A string literal as a template argument.
template <size_t N>
struct Literal {
  consteval Literal(const char (&s)[N]) { std::copy_n(s, N, text); }  // implicit: has<"NCCL INFO">()
  char text[N]{};
};

// A line with the pairs of adjacent bytes it holds, hashed into 1024 bits. A line is checked against some forty needles
// and holds few of them: has() rules most out from a pair the line lacks, with the needle's pairs hashed at compile
// time, instead of searching the line for each (those searches were half of the reader's time on a large log).
class ScannedLine {
 public:
  explicit ScannedLine(std::string_view s) : text_(s) {
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint16_t at = slot(s[i], s[i + 1]);
      pairs_[at >> 6] |= uint64_t{1} << (at & 63);
    }
  }
  template <Literal W>
  [[nodiscard]] bool has() const {
    static constexpr auto slots = [] {
      std::array<uint16_t, sizeof(W.text) - 2> a{};
      for (size_t i = 0; i < a.size(); ++i) a[i] = slot(W.text[i], W.text[i + 1]);
      return a;
    }();
    for (const uint16_t at : slots)
      if ((pairs_[at >> 6] >> (at & 63) & 1) == 0) return false;
    return text_.find(std::string_view(W.text, sizeof(W.text) - 1)) != std::string_view::npos;
  }

 private:
  // Fibonacci hashing of the pair to 10 bits.
  static constexpr uint16_t slot(char a, char b) {
    return static_cast<uint16_t>(
        (uint32_t{static_cast<unsigned char>(a)} << 8 | static_cast<unsigned char>(b)) * 0x9E3779B1u >> 22);
  }
  std::string_view text_;
  std::array<uint64_t, 16> pairs_{};
};

// PyTorch's C++ log line (c10's "[W reducer.cpp:1300] " before 2.4, "[W1206 10:00:00.123456789
// ProcessGroupNCCL.cpp:4561] " since) from one of its distributed sources (torch/csrc/distributed/c10d/): the file name
// before the line number.
bool torch_distributed_source(std::string_view line) {
  const size_t close = line.find(']');
  if (close == std::string_view::npos || close > 80) return false;
  const auto head = line.substr(0, close);
  const size_t colon = head.rfind(':');
  if (colon == std::string_view::npos) return false;
  const size_t start = head.find_last_of(" /", colon);
  if (start == std::string_view::npos) return false;
  const auto file = head.substr(start + 1, colon - start - 1);
  for (const std::string_view f : {"reducer.", "logger.", "comm.", "ProcessGroup", "NCCLUtils.", "Utils.hpp", "socket.",
                                   "TCPStore", "FileStore.", "PrefixStore.", "Backend.", "FlightRecorder", "Work.",
                                   "default_comm_hooks.", "SymmetricMemory", "intra_node_comm."})
    if (file.starts_with(f)) return true;
  return false;
}

// std::isspace in the "C" locale (the program never sets another), without a library call per byte.
bool space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

// s without the blanks around it.
std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// The words of s, as views into it.
std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && space(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !space(s[j])) ++j;
    if (j > i) w.push_back(s.substr(i, j - i));
    i = j;
  }
  return w;
}

// "FAILED", "FAILURE" or "FAIL" as a word of its own in capitals: a program's, a test harness's or nccl-tests' own
// verdict. In the triage corpus (tests/data/triage, 368 logs) every log with such a word records a fatal failure.
bool capital_failure(std::string_view s) {
  auto letter = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  for (size_t at = s.find("FAIL"); at != std::string_view::npos; at = s.find("FAIL", at + 4)) {
    size_t end = at + 4;
    if (s.substr(at).starts_with("FAILED")) end = at + 6;
    if (s.substr(at).starts_with("FAILURE")) end = at + 7;
    if ((at == 0 || !letter(s[at - 1])) && (end == s.size() || !letter(s[end]))) return true;
  }
  return false;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return *end == '\0';
}

bool is_integer(std::string_view s) {
  return !s.empty() && std::all_of(s.begin() + (s[0] == '-' ? 1 : 0), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  }) && s != "-";
}

// The integer after `key` in s (skipping spaces, ':' and '='), or -1.
// A backtrace frame in an NCCL function: "ncclShmOpen(char*, …)", "ncclGroupEnd()  ???:0" (an `nccl` then a capital
// and a call's parenthesis).
bool is_nccl_frame(std::string_view s) {
  for (size_t at = s.find("nccl"); at != std::string_view::npos; at = s.find("nccl", at + 4)) {
    size_t i = at + 4;
    if (i >= s.size() || !std::isupper(static_cast<unsigned char>(s[i]))) continue;
    while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
    if (i < s.size() && s[i] == '(' && (at == 0 || !std::isalnum(static_cast<unsigned char>(s[at - 1])))) return true;
  }
  return false;
}

int64_t int_after(std::string_view s, std::string_view key, size_t from = 0) {
  const size_t at = s.find(key, from);
  if (at == std::string_view::npos) return -1;
  size_t i = at + key.size();
  while (i < s.size() && (s[i] == ' ' || s[i] == ':' || s[i] == '=' || s[i] == '#')) ++i;
  size_t j = i;
  if (j < s.size() && s[j] == '-') ++j;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  int64_t v = -1;
  if (j > i) std::from_chars(s.data() + i, s.data() + j, v);
  return v;
}

// The word after `key` (up to a space, ',' or ')').
std::string word_after(std::string_view s, std::string_view key) {
  const size_t at = s.find(key);
  if (at == std::string_view::npos) return {};
  const size_t i = at + key.size();
  size_t j = i;
  while (j < s.size() && s[j] != ' ' && s[j] != ',' && s[j] != ')') ++j;
  return std::string(s.substr(i, j - i));
}

// A result row of any nccl-tests layout: size count type [redop] [root], then per half time algbw busbw #wrong (or an
// older float error, or N/A). Both halves, or only out-of-place when the row is cut short. mpirun's "[0]" tags that
// flushes left in the middle of a row are dropped, and a column a user put in front (a node count) is skipped.
bool read_row(const std::string& line, NcclLog& log) {
  std::vector<std::string> w;
  for (const auto word : words(line)) {
    std::string x(word);
    // "-1[0]", "[0]1626.5", "[0]": a rank tag glued to a number
    for (size_t open = x.find('['); open != std::string::npos; open = x.find('[')) {
      const size_t close = x.find(']', open);
      if (close == std::string::npos || !std::all_of(x.begin() + open + 1, x.begin() + close, [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
          }))
        break;
      x.erase(open, close - open + 1);
    }
    if (!x.empty()) w.push_back(std::move(x));
  }
  size_t s = 0;
  while (s < 2 && s + 3 < w.size() &&
         !(is_integer(w[s]) && is_integer(w[s + 1]) && !is_number(w[s + 2]) && w[s + 2] != "N/A"))
    ++s;
  if (w.size() < s + 6 || !is_integer(w[s]) || !is_integer(w[s + 1]) || is_number(w[s + 2])) return false;
  NcclTestRow r;
  r.bytes = std::strtoull(w[s].c_str(), nullptr, 10);
  r.count = std::strtoull(w[s + 1].c_str(), nullptr, 10);
  r.type = w[s + 2];
  size_t base = s + 3;
  if (base < w.size() && !is_number(w[base]) && w[base] != "N/A") r.redop = w[base++];  // old alltoall: no redop
  if ((w.size() - base) % 4 == 1 && is_integer(w[base])) ++base;                        // root
  const size_t halves = std::min<size_t>(2, (w.size() - base) / 4);
  if (halves == 0 || (w.size() - base) % 4 > 1) return false;
  for (size_t k = 0; k < halves; ++k) {
    const size_t b = base + 4 * k;
    if (!is_number(w[b]) || !is_number(w[b + 1]) || !is_number(w[b + 2])) return false;
    r.time_us[k] = std::strtod(w[b].c_str(), nullptr);
    r.algbw[k] = std::strtod(w[b + 1].c_str(), nullptr);
    r.busbw[k] = std::strtod(w[b + 2].c_str(), nullptr);
    const auto& wrong = w[b + 3];
    if (is_integer(wrong)) {
      r.wrong[k] = std::strtoll(wrong.c_str(), nullptr, 10);
    } else {
      r.wrong[k] = -1;
      if (is_number(wrong)) r.max_error = std::max(r.max_error, std::strtod(wrong.c_str(), nullptr));
    }
  }
  if (halves == 1) r.time_us[1] = r.algbw[1] = r.busbw[1] = 0, r.wrong[1] = -1;
  // The same size printed twice (a header repeated, two runs of a build without MPI): keep the first.
  if (std::any_of(log.rows.begin(), log.rows.end(),
                  [&](const NcclTestRow& x) { return x.bytes == r.bytes && x.type == r.type && x.redop == r.redop; }))
    return true;
  log.rows.push_back(r);
  return true;
}

// NCCL up to 2.4 printed WARN lines without the "NCCL" tag and, in many logs, without the host prefix:
// "include/socket.h:344 WARN Socket creation failed : …". The position of " WARN " where a line is one, else npos.
size_t old_style_warn(std::string_view s) {
  const size_t at = s.find(" WARN ");
  if (at == std::string_view::npos || at < 4) return std::string_view::npos;
  const size_t colon = s.rfind(':', at);
  if (colon == std::string_view::npos || colon + 1 == at) return std::string_view::npos;
  for (size_t i = colon + 1; i < at; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::string_view::npos;
  const auto file = s.substr(0, colon);
  const size_t dot = file.rfind('.');
  if (dot == std::string_view::npos || file.find(' ') != std::string_view::npos) return std::string_view::npos;
  const auto ext = file.substr(dot + 1);
  return ext == "h" || ext == "cc" || ext == "cu" || ext == "c" || ext == "cpp" ? at : std::string_view::npos;
}

// A table row's first character (after spaces) is a digit.
bool starts_with_digit(std::string_view s) {
  size_t i = s.find_first_not_of(' ');
  if (i != std::string_view::npos && s[i] == '[') {  // mpirun's "[0]" in front of a row
    const size_t close = s.find(']', i);
    if (close != std::string_view::npos && close < i + 8) i = s.find_first_not_of(' ', close + 1);
  }
  return i != std::string_view::npos && std::isdigit(static_cast<unsigned char>(s[i]));
}

// "host:pid:tid [dev] NCCL INFO …": the host, or "".
std::string nccl_host(std::string_view line) {
  const size_t nccl = line.find(" NCCL ");
  const size_t bracket = line.find(" [");
  if (nccl == std::string_view::npos || bracket == std::string_view::npos || bracket > nccl) return {};
  const auto head = line.substr(0, bracket);
  const size_t c2 = head.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return {};
  const size_t c1 = head.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0) return {};
  return std::string(head.substr(0, c1));
}

// "host:pid" of an NCCL line (hosts are often redacted to one name: the process tells ranks apart), or "".
std::string nccl_process(std::string_view line) {
  const auto host = nccl_host(line);
  if (host.empty()) return {};
  size_t j = host.size() + 1;
  while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
  return std::string(line.substr(0, j));
}

// The line read and the three after it (where a wrapped line continues), framed as the reader comes to them.
class LineWindow {
 public:
  explicit LineWindow(std::string_view text) : framer_(text) { fill(); }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  // How many lines after the current one are there (at most 3); only while !empty().
  [[nodiscard]] size_t ahead() const { return count_ - 1; }
  // The current line (0) or one after it (up to ahead()).
  [[nodiscard]] const FramedLine& operator[](size_t k) const { return lines_[(head_ + k) % lines_.size()]; }
  void advance() {
    head_ = (head_ + 1) % lines_.size();
    --count_;
    fill();
  }

 private:
  void fill() {
    while (count_ < lines_.size() && framer_.next(lines_[(head_ + count_) % lines_.size()])) ++count_;
  }
  LineFramer framer_;
  std::array<FramedLine, 4> lines_;
  size_t head_ = 0, count_ = 0;
};

struct Reader {
  NcclLog& log;
  bool in_ras = false;
  int64_t ras_op = -1;       // the operation of the last "N ranks have launched up to operation M" line
  bool ras_no_data = false;  // the ranks listed next are those RAS has no data from
  bool nccl_frames = false;  // a backtrace frame in NCCL (a libnccl path, or an nccl* function of a stripped build)
  size_t sigbus_line = 0;    // the first SIGBUS line (a bus error)
  bool interrupted = false;  // gdb reported a SIGINT: the person debugging stopped the program
  std::string sigbus_text = {};
  // Inside the traceback Python prints under "Exception ignored in: …" (an exception in a destructor or callback, at
  // interpreter exit): up to the exception's own line, which ends it. Not a failure of the process.
  bool in_ignored_exception = false;
  bool in_link_status = false;  // inside `dcgmi nvlink --link-status`
  int link_gpu = -1;            // its last "gpuId N:" line
  bool in_remapped_rows = false;
  bool in_dcgm_table = false;  // the table `dcgmi diag` prints, up to its first line that is not one of its rows

  // DCGM's link-status block and diagnostic table, nvidia-smi -q's Remapped Rows section; looked at only inside those
  // blocks or on their opening lines (most lines of a large log are neither).
  bool node_tools(const std::string& line, const ScannedLine& scan) {
    if (!in_link_status && !in_remapped_rows && !in_dcgm_table && !scan.has<"NvLink Link Status">() &&
        !scan.has<"dcgmi diag">() && !scan.has<"Successfully ran diagnostic">() && !scan.has<"Remapped Rows">())
      return false;
    const std::string_view t = trim(line);
    if (t.find("NvLink Link Status") != std::string_view::npos) return in_link_status = true;
    if (in_link_status) {
      if (t.starts_with("gpuId ")) {
        size_t i = 6;
        while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
        link_gpu = i > 6 ? std::atoi(std::string(t.substr(6, i - 6)).c_str()) : -1;
        return true;
      }
      if (link_gpu >= 0 && !t.empty() && t.find_first_not_of("UDX_ ") == std::string_view::npos) {
        std::string& st = log.nvlink_states[link_gpu];
        for (const char c : t)
          if (c != ' ' && st.size() < 64) st.push_back(c);
        link_gpu = -1;
        return true;
      }
      if (t.starts_with("Key: Up=U")) in_link_status = false;
      return t == "GPUs:" || t == "NvSwitches:" || t.starts_with("No NvSwitches") || t.starts_with("Key: ") ||
             t.starts_with("+--") || t.starts_with("|");
    }
    if (t.starts_with("dcgmi diag") || t.find("Successfully ran diagnostic") != std::string_view::npos)
      return log.dcgm_diag = in_dcgm_table = true;
    if (in_dcgm_table && !t.starts_with("|") && !t.starts_with("+")) in_dcgm_table = false;
    if (in_dcgm_table) {
      // "| Memory                    | Fail - GPU: 0 …": a check that failed
      const size_t bar = t.find('|', 1);
      if (bar != std::string_view::npos && trim(t.substr(bar + 1)).starts_with("Fail") && log.dcgm_failed.size() < 8)
        log.dcgm_failed.emplace_back(t.substr(0, 200));
      return true;
    }
    if (t == "Remapped Rows") return in_remapped_rows = true;
    if (in_remapped_rows) {
      const size_t colon = t.find(" : ");
      if (colon == std::string_view::npos) return in_remapped_rows = false;
      const auto key = trim(t.substr(0, colon)), value = trim(t.substr(colon + 3));
      if (key == "Pending") log.remap_pending = value == "Yes";
      if (key == "Remapping Failure Occurred") log.remap_failed = value == "Yes";
      if (key == "Uncorrectable Error") log.remap_uncorrectable = std::atoi(std::string(value).c_str());
      return true;
    }
    return false;
  }

  bool error_line(const FramedLine& fl) {
    std::map<std::string, std::string> facts;
    auto kinds = match_errors(fl.text, facts);
    if (has(fl.text, "Exception ignored in")) {
      in_ignored_exception = true;
    } else if (in_ignored_exception) {
      std::erase_if(kinds, [](const ErrorKind* k) { return std::string_view(k->id) == "process-failed"; });
      const std::string_view t = fl.text;
      if (!t.empty() && t.front() != ' ' && t.front() != '\t' && !t.starts_with("Traceback"))
        in_ignored_exception = false;
    }
    for (const auto* k : kinds) {
      auto it = std::find_if(log.errors.begin(), log.errors.end(), [&](const ErrorSeen& e) { return e.id == k->id; });
      if (it == log.errors.end()) {
        ErrorSeen e;
        e.id = k->id;
        e.first_line = fl.number;
        e.example = fl.text.substr(0, 300);
        log.errors.push_back(e);
        it = log.errors.end() - 1;
      }
      ++it->count;
      it->last_line = fl.number;
      // The plugin's own lines, and NCCL's "net.cc:N -> 2" frame of loading it (src/net.cc: the network plugins' init).
      if (has(fl.text, "NET/OFI") || (has(fl.text, "net.cc:") && has(fl.text, " -> "))) ++it->plugin_lines;
      if (fl.rank >= 0) it->ranks.insert(fl.rank);
      if (std::string_view(k->id) == "ib-completion-error" && facts.contains("status"))
        log.ib_completion_status.push_back(std::atoi(facts.at("status").c_str()));
      for (const auto& [name, value] : facts)
        if (!value.empty() && !it->facts.contains(name)) it->facts[name] = value;
    }
    return !kinds.empty();
  }

  // WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 milliseconds
  void watchdog(const std::string& text, int rank) {
    const size_t work = text.find("WorkNCCL(");
    if (work == std::string::npos) return;
    const std::string_view w(text.c_str() + work, text.size() - work);
    NcclLog::Timeout t;
    t.rank = rank;
    t.seq = int_after(w, "SeqNum=");
    t.op = word_after(w, "OpType=");
    t.numel = int_after(w, "NumelIn=");
    t.numel_out = int_after(w, "NumelOut=");
    t.timeout_ms = std::max<int64_t>(0, int_after(w, "Timeout(ms)="));
    t.ran_ms = std::max<int64_t>(0, int_after(w, "ran for "));
    std::erase_if(log.timeouts,
                  [&](const NcclLog::Timeout& x) { return x.op.empty() && x.seq == t.seq && x.rank == t.rank; });
    const bool seen = std::any_of(log.timeouts.begin(), log.timeouts.end(), [&](const NcclLog::Timeout& x) {
      return x.seq == t.seq && x.op == t.op && x.rank == t.rank;
    });
    if (!seen) log.timeouts.push_back(t);
  }

  void progress(std::string_view text, int rank) {
    // "last enqueued NCCL work: 12, last completed NCCL work: 11" (any capitalisation, "work:" or "work")
    const size_t enq_at = text.find("ast enqueued");
    const size_t done_at = text.find("ast completed");
    if (enq_at == std::string_view::npos) return;
    auto& p = log.progress[rank];
    // "[PG ID 11 PG GUID 119 Rank 1]": each process group numbers its collectives on its own.
    if (const size_t pg = text.find("[PG "); pg != std::string_view::npos)
      if (const size_t end = text.find(" Rank", pg); end != std::string_view::npos && end - pg < 80)
        p.group = std::string(text.substr(pg + 4, end - pg - 4));
    const int64_t enq = int_after(text, "work", enq_at);
    const int64_t done = done_at == std::string_view::npos ? -1 : int_after(text, "work", done_at);
    if (enq >= 0) p.last_enqueued = enq;
    if (done >= 0) p.last_completed = done;
    for (auto& t : log.timeouts)
      if (t.rank == rank && t.last_enqueued < 0) t.last_enqueued = enq, t.last_completed = done;
  }

  void desync(std::string_view text) {
    // "ranks [1, 3] are the lagging ranks", "[2] joined but didn't finish collective #5",
    // "[2] finished collective #5, but didn't join collective #6", "Rank 2 is not joined"
    auto ranks_in = [&](std::string_view s) {
      for (size_t i = 0; i < s.size();) {
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
          ++i;
          continue;
        }
        size_t j = i;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        int r = -1;
        std::from_chars(s.data() + i, s.data() + j, r);
        if (r >= 0 && r < 1000000) log.lagging_ranks.insert(r);
        i = j;
      }
    };
    if (const size_t at = text.find("are the lagging ranks"); at != std::string_view::npos) {
      const size_t open = text.rfind('[', at);
      const size_t close = text.rfind(']', at);
      if (open != std::string_view::npos && close != std::string_view::npos && open < close)
        ranks_in(text.substr(open + 1, close - open - 1));
    }
    for (const std::string_view w : {"] joined but didn't finish", "] finished collective"})
      if (const size_t at = text.find(w); at != std::string_view::npos) {
        const size_t open = text.rfind('[', at);
        if (open != std::string_view::npos) ranks_in(text.substr(open + 1, at - open - 1));
      }
    // PyTorch's fr_trace analyzer over Flight Recorder dumps: "missing ranks: {3, 4, 5, 6, 7}" under "Not all ranks
    // joining collective …".
    if (const size_t at = text.find("missing ranks: {"); at != std::string_view::npos) {
      const size_t close = text.find('}', at);
      if (close != std::string_view::npos) ranks_in(text.substr(at + 16, close - at - 16));
    }
    if (const size_t at = text.find(" is not joined"); at != std::string_view::npos) {
      const size_t r = text.rfind("ank ", at);
      if (r != std::string_view::npos) ranks_in(text.substr(r + 4, at - r - 4));
    }
    if (log.desync.size() < 8) log.desync.emplace_back(text.substr(0, 300));
  }

  bool line(const FramedLine& fl, const std::string& joined) {
    const std::string& line = fl.text;
    const ScannedLine scan(line);
    bool hit = false;
    if (fl.rank >= 0) log.ranks_seen.insert(fl.rank);
    // Crash backtraces (gdb, UCX, glibc): a frame in NCCL ("in ncclShmOpen(char*, …)", "ncclGroupEnd()  ???:0",
    // ".../libnccl.so.2:0"), and a bus error. NCCL maps its shared-memory segments from /dev/shm; a bus error inside
    // NCCL is a segment the full /dev/shm cannot back (Docker's default is 64 MB).
    if (scan.has<"libnccl">() || is_nccl_frame(line)) nccl_frames = true, hit = true;
    if ((scan.has<"SIGBUS">() || scan.has<"Bus error">()) && sigbus_line == 0)
      sigbus_line = fl.number, sigbus_text = line.substr(0, 300);
    if (scan.has<"received signal SIGINT">()) interrupted = true, hit = true;
    if (interrupted && log.interrupted_in.empty())
      for (const char* wait : {"testStreamSynchronize", "cudaStreamSynchronize", "cuStreamSynchronize",
                               "cudaDeviceSynchronize", "ncclCommGetAsyncError"})
        if (line.find(wait) != std::string::npos) log.interrupted_in = wait, hit = true;
    // PyTorch Lightning's DDP start ("initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8"; from 1.6 "Initializing
    // distributed: GLOBAL_RANK: 0, MEMBER: 1/2"): the ranks that started.
    if (scan.has<"initializing ddp: GLOBAL_RANK:">() || scan.has<"Initializing distributed: GLOBAL_RANK:">()) {
      const int64_t r = int_after(line, "GLOBAL_RANK:");
      const size_t member = line.find("MEMBER:");
      const size_t slash = member == std::string::npos ? member : line.find('/', member);
      if (r >= 0) ++log.ddp_rank_lines[static_cast<int>(r)];
      if (slash != std::string::npos)
        log.ddp_world = std::max<int>(log.ddp_world, static_cast<int>(int_after(line, "/", slash)));
      hit = true;
    }
    // PyTorch's own warnings about its NCCL settings ("[W Utils.hpp:108] Warning: Environment variable
    // NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead").
    if (scan.has<"TORCH_NCCL_">()) hit = true;
    if (node_tools(line, scan)) hit = true;
    if (line.size() > 4 && line[0] == '[' && (line[1] == 'W' || line[1] == 'E' || line[1] == 'I') &&
        torch_distributed_source(line)) {
      ++log.torch_warnings, hit = true;
      if (scan.has<"find_unused_parameters=True was specified">() && scan.has<"did not find any unused parameters">())
        log.ddp_unused_flag = true;
    }
    // A line a launcher tagged with its rank is the job's own output, whatever the program printed after the tag;
    // text-generation-inference's launcher names its shards' ranks itself ("shard-manager:
    // text_generation_launcher: Waiting for shard to be ready... rank=2").
    if (fl.tagged) ++log.tagged_lines, hit = true;
    // DeepSpeed's launcher starting the ranks ("[launch.py:162:main] WORLD INFO DICT: {'localhost': [0, 1]}",
    // "dist_world_size=2", "process 649291 spawned with command: […, '--local_rank=0']"): the job's own output.
    const auto launcher_line = [&](std::string_view rank_key) {
      if (const int64_t r = int_after(line, rank_key); r >= 0 && r < 1'000'000)
        log.ranks_seen.insert(static_cast<int>(r));
      ++log.tagged_lines, hit = true;
    };
    if (scan.has<"WORLD INFO DICT">() || scan.has<"dist_world_size=">() ||
        (scan.has<"spawned with command">() && scan.has<"--local_rank=">()))
      launcher_line("--local_rank=");
    if (scan.has<"text_generation_launcher">()) launcher_line("rank=");
    // nccl-tests
    if (scan.has<"nccl-tests version ">()) log.tests_version = word_after(line, "nccl-tests version "), hit = true;
    if (scan.has<"Collective test starting: ">())
      log.test = line.substr(line.find("Collective test starting: ") + 26), hit = true;
    if (scan.has<"minBytes ">() && scan.has<"maxBytes ">()) {
      log.min_bytes = static_cast<uint64_t>(std::max<int64_t>(0, int_after(line, "minBytes ")));
      log.max_bytes = static_cast<uint64_t>(std::max<int64_t>(0, int_after(line, "maxBytes ")));
      hit = true;
    }
    // "#  Rank  0 Group  0 Pid 1 on host device  0 [0x18] NVIDIA H100" (indented too: pastes in rst or markdown
    // blocks).
    if (const size_t lead = line.find_first_not_of(" \t"); lead != std::string::npos && line[lead] == '#' &&
                                                           scan.has<"Rank ">() && scan.has<" device ">() &&
                                                           scan.has<" on ">()) {
      log.devices.push_back(line.substr(line.find("Rank ")));
      const auto w = words(std::string_view(line).substr(line.find(" on ") + 4));
      if (!w.empty()) log.test_hosts.emplace(w[0]);
      hit = true;
    }
    if (scan.has<"algbw">() && scan.has<"busbw">() && scan.has<"size">()) log.table_header = true;
    if (scan.has<"will restart worker group">()) log.restart_line = fl.number, hit = true;
    if (log.restart_line > 0 && scan.has<"WorkerState.SUCCEEDED">()) log.succeeded_line = fl.number, hit = true;
    // A benchmark's own print of its bus bandwidth: "busbw: 18.973 GBps (151.8 Gbps)", "busbw = 45.2 GB/s". Not the
    // nccl-tests header, whose "busbw" is a column name.
    if (scan.has<"busbw">())
      if (const size_t b = line.find("busbw"); b != std::string::npos) {
        size_t i = b + 5;
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size() && (line[i] == ':' || line[i] == '=')) {
          char* end = nullptr;
          const double v = std::strtod(line.c_str() + i + 1, &end);
          std::string_view unit(end, static_cast<size_t>(line.c_str() + line.size() - end));
          while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
          const bool bytes = unit.starts_with("GBps") || unit.starts_with("GB/s") || unit.starts_with("GB ");
          const bool bits = unit.starts_with("Gbps") || unit.starts_with("Gb/s");
          if (end != line.c_str() + i + 1 && v > 0 && (bytes || bits)) {
            log.reported_busbw.push_back(bits ? v / 8 : v);
            hit = true;
          }
        }
      }
    if (scan.has<" ranks">())
      if (const size_t r = line.find(" ranks");
          r != std::string::npos && r > 0 && std::isdigit(static_cast<unsigned char>(line[r - 1]))) {
        size_t d = r;
        while (d > 0 && std::isdigit(static_cast<unsigned char>(line[d - 1]))) --d;
        if (r - d <= 6) log.reported_ranks = std::stoi(line.substr(d, r - d));
      }
    if (scan.has<"Avg bus bandwidth">()) {
      const size_t c = line.find(':', line.find("Avg bus bandwidth"));
      if (c != std::string::npos) log.avg_busbw = std::strtod(line.c_str() + c + 1, nullptr);
      hit = true;
    }
    if (scan.has<"Out of bounds values">()) {
      log.out_of_bounds = std::max<int64_t>(0, int_after(line, "Out of bounds values"));
      if (scan.has<"FAILED">()) log.tests_failed = true;
      hit = true;
    }
    if (starts_with_digit(line) && (read_row(line, log) || (&joined != &line && read_row(joined, log)))) hit = true;
    // A row cut by the error that ended the test: "      8   8  f8e4m3  sum  -1  Test CUDA failure common.cu:516 …".
    if (starts_with_digit(line) && log.failed_at_bytes == 0 &&
        (scan.has<"Test CUDA failure">() || scan.has<"Test NCCL failure">())) {
      const auto w = words(line);
      if (w.size() >= 3 && is_integer(w[0]) && is_integer(w[1]) && !is_number(std::string(w[2])))
        log.failed_at_bytes = std::max<uint64_t>(1, std::strtoull(std::string(w[0]).c_str(), nullptr, 10)), hit = true;
    }
    if (scan.has<"validation: 0">()) log.validation_off = true, hit = true;  // nccl-tests' parameter line
    // NCCL INFO
    if (log.nccl_version.empty() && scan.has<"NCCL version">()) {
      std::string v = word_after(line, "NCCL version ");
      while (!v.empty() && !std::isalnum(static_cast<unsigned char>(v.back()))) v.pop_back();
      if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0]))) log.nccl_version = v, hit = true;
    }
    const size_t bare_warn = scan.has<"NCCL WARN">() ? std::string_view::npos : old_style_warn(line);
    // aws-ofi-nccl's own test logger: "INFO: Function: ofi_init Line: 1076: NET/OFI …", "WARN: Function: …".
    const bool plugin_log = scan.has<": Function: ">() && scan.has<"NET/OFI">();
    const bool warn_line =
        scan.has<"NCCL WARN">() || bare_warn != std::string_view::npos || (plugin_log && scan.has<"WARN: Function:">());
    const bool nccl_line = scan.has<"NCCL INFO">() || warn_line || plugin_log;
    if (nccl_line) {
      if (const auto h = nccl_host(line); !h.empty() && log.hosts.size() < 4096) log.hosts.insert(h);
    }
    if (scan.has<" via ">() && (scan.has<"Channel">() || scan.has<" -> ">())) {
      static const std::regex via(
          R"(via (NET/[A-Za-z_0-9]+(?: [A-Z][A-Za-z]+(?=/\d))?(?:/\d+)?(?:\(\d+\))?(?:/GDRDMA)?|P2P/[A-Za-z ]+|SHM\S*|NVLS|COLLNET\S*|direct shared memory))");
      std::smatch m;
      // The search starts at the first "via ", where any match starts: std::regex tries every position before it.
      if (std::regex_search(line.begin() + static_cast<std::ptrdiff_t>(line.find("via ")), line.end(), m, via)) {
        std::string t = m[1];
        if (t.starts_with("NET/")) {  // NET/IB/3(2)/GDRDMA → NET/IB/GDRDMA: the device index is not a kind
          static const std::regex dev(R"(/\d+(\(\d+\))?)");
          t = std::regex_replace(t, dev, "");
        }
        while (!t.empty() && t.back() == ' ') t.pop_back();
        if (t == "direct shared memory") t = "SHM";  // NCCL 2.4's wording
        if (t.starts_with("SHM")) t = "SHM";
        if (t.starts_with("P2P/") && t.size() > 4) {
          const size_t sp = t.find(' ');
          if (sp != std::string::npos) t = t.substr(0, sp);
        }
        ++log.transports[t];
        hit = true;
      }
    }
    if (scan.has<"Using network ">()) {
      // The network's name is the rest of the line ("IB", "Socket", "AWS Libfabric"), less a collector's note
      // ("[repeated 15x across cluster]").
      const size_t at = line.find("Using network ") + 14;
      std::string_view rest = std::string_view(line).substr(at, std::min<size_t>(line.size() - at, 64));
      rest = rest.substr(0, std::min(rest.find(" ["), rest.find("  ")));
      while (!rest.empty() && (rest.back() == ' ' || rest.back() == '.')) rest.remove_suffix(1);
      log.network = std::string(rest);
      if (const auto h = nccl_process(line); !h.empty() && log.network_by_host.size() < 4096)
        log.network_by_host[h] = log.network;
      hit = true;
    }
    if (scan.has<"NET/Socket : Using">()) {
      log.socket_fallback = true;
      // "[0]ib0:…", "[0]ibp5s0:…": sockets over IP-over-InfiniBand, so the host has InfiniBand that RDMA does not use.
      const size_t at = line.find("]ib", line.find("NET/Socket : Using"));
      if (at != std::string::npos) log.ib_device_failed = true;
      hit = true;
    }
    if (scan.has<"Failed to open libibverbs">() || scan.has<"libibverbs.so">()) log.ibverbs_missing = true, hit = true;
    if (scan.has<"Unable to open device">() || scan.has<"ibv_open_device failed">())
      log.ib_device_failed = true, hit = true;
    // NCCL's own wording counts without its prefix too (a paste with "host:pid:tid [dev] NCCL INFO" stripped).
    if ((nccl_line || scan.has<"NVLS multicast support is available">()) && scan.has<"NVLS">() &&
        !scan.has<"not available">() && !scan.has<"0 nvls channels">() && !scan.has<"NCCL_NVLS">())
      log.nvls = true, hit = true;
    if (scan.has<"Destroy COMPLETE">()) ++log.destroy_complete, hit = true;
    // "NVLS Head  0:  0  8": NCCL prints each NVLS head's rank on every node (graph/connect.cc, the first 20 nodes),
    // so the count is the job's nodes where the log has no "nNodes" (one host's lines).
    if (scan.has<"NVLS Head ">()) {
      if (const size_t colon = line.find(':', line.find("NVLS Head ") + 10); colon != std::string::npos) {
        const auto heads = words(std::string_view(line).substr(colon + 1));
        if (heads.size() > 1 &&
            std::all_of(heads.begin(), heads.end(), [](std::string_view w) { return is_integer(w); }))
          log.nnodes = std::max<int>(log.nnodes, static_cast<int>(heads.size()));
      }
      hit = true;
    }
    if (scan.has<"Init COMPLETE">()) {
      ++log.init_complete;
      if (const auto n = int_after(line, "nranks "); n > 0) log.nranks = std::max<int>(log.nranks, static_cast<int>(n));
      hit = true;
    }
    if (scan.has<" nRanks ">()) {
      if (const auto n = int_after(line, " nRanks "); n > 0)
        log.nranks = std::max<int>(log.nranks, static_cast<int>(n));
      if (const auto n = int_after(line, " nNodes "); n > 0)
        log.nnodes = std::max<int>(log.nnodes, static_cast<int>(n));
      hit = true;
    }
    if (scan.has<"Pattern ">() && scan.has<"nChannels ">()) {
      NcclLog::Graph g;
      g.pattern = static_cast<int>(int_after(line, "Pattern "));
      g.crossnic = static_cast<int>(int_after(line, "crossNic "));
      g.channels = static_cast<int>(std::max<int64_t>(0, int_after(line, "nChannels ")));
      const char* bwkey = scan.has<" bw ">() ? " bw " : " speed ";
      if (const size_t at = line.find(bwkey); at != std::string::npos) {
        char* end = nullptr;
        g.bw_intra = std::strtod(line.c_str() + at + std::strlen(bwkey), &end);
        if (end && *end == '/') g.bw_inter = std::strtod(end + 1, nullptr);
      }
      g.type = word_after(line, "type ");
      if (log.graphs.size() < 16) log.graphs.push_back(g);
      hit = true;
    }
    if (scan.has<" coll channels">()) {
      const size_t at = line.find(" coll channels");
      const size_t start = line.find_last_not_of("0123456789", at - 1);
      log.coll_channels =
          std::max(log.coll_channels, std::atoi(line.c_str() + (start == std::string::npos ? 0 : start + 1)));
      if (const size_t nv = line.find(" nvls channels"); nv != std::string::npos) {
        const size_t s = line.find_last_not_of("0123456789", nv - 1);
        log.nvls_channels = std::max(log.nvls_channels, std::atoi(line.c_str() + s + 1));
      }
      hit = true;
    }
    if (scan.has<" Bytes -> Algo ">()) {
      static const std::regex tuning(
          R"((\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})");
      std::smatch m;
      if (std::regex_search(line, m, tuning)) {
        auto& t = log.tuning[{m[1], std::stoull(m[2])}];
        const int channels = std::stoi(m[6]) - std::stoi(m[5]) + 1;
        if (t.calls == 0) {
          t.algo = m[3];
          t.proto = m[4];
          t.channels = channels;
        } else if (t.algo != m[3] || t.proto != m[4] || t.channels != channels) {
          t.varied = true;
        }
        ++t.calls;
        hit = true;
      }
    }
    // "NCCL_X set by environment to V." and, for the variables NCCL echoes itself, "NCCL_IB_HCA set to V"; every
    // one of a line (records pasted glued into one line).
    if (scan.has<" set by environment to ">() || (scan.has<"NCCL_">() && scan.has<" set to ">())) {
      static const std::regex env(R"((NCCL_[A-Z0-9_]+) set (?:by environment )?to (\S+))");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), env); it != std::sregex_iterator(); ++it) {
        std::string value = (*it)[2];
        if (value.ends_with(".")) value.pop_back();  // "set by environment to 1."
        log.env[(*it)[1]] = value;
        hit = true;
      }
    }
    if (scan.has<"-x ">() && scan.has<"NCCL_">()) {
      static const std::regex xenv(R"(-x\s+(NCCL_[A-Z0-9_]+)=(\S+))");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), xenv); it != std::sregex_iterator(); ++it)
        log.env[(*it)[1]] = (*it)[2], hit = true;
    }
    if (warn_line) {
      ++log.warn_lines;
      if (log.warnings.size() < 8)
        log.warnings.push_back(line.substr(bare_warn != std::string_view::npos ? bare_warn + 6
                                           : scan.has<"NCCL WARN">()           ? line.find("NCCL WARN") + 10
                                                                               : line.find("WARN: ") + 6,
                                           240));
      hit = true;
    }
    // PyTorch ProcessGroupNCCL
    if (has(joined, "WorkNCCL(") && (has(joined, "atchdog caught") || has(joined, "timeout")))
      watchdog(joined, fl.rank), hit = true;
    if ((scan.has<"Timeout at NCCL work">() || scan.has<"detected by watchdog at work">()) &&
        !scan.has<"WorkNCCL(">()) {
      // The watchdog's verdict without the WorkNCCL(...) text: the collective's number only.
      NcclLog::Timeout t;
      t.rank = fl.rank;
      t.seq = scan.has<"sequence id">() ? int_after(line, "sequence id") : int_after(line, "at work");
      if (scan.has<"at NCCL work">()) t.seq = int_after(line, "at NCCL work");
      const bool seen = std::any_of(log.timeouts.begin(), log.timeouts.end(),
                                    [&](const NcclLog::Timeout& x) { return x.seq == t.seq && x.rank == t.rank; });
      if (!seen && t.seq >= 0) log.timeouts.push_back(t);
      hit = true;
    }
    if (scan.has<"ast enqueued">()) progress(line, fl.rank), hit = true;
    // NCCL RAS ("ncclras"): "N ranks have launched up to operation M", then the outliers "Rank R -- GPU …".
    if (scan.has<"ranks have launched up to operation">() || scan.has<"rank has launched up to operation">()) {
      const size_t first = line.find_first_not_of(' ');
      const int64_t n = first == std::string::npos ? -1 : int_after(line.substr(first), "");
      ras_op = int_after(line, "up to operation");
      if (n > 0 && ras_op >= 0) log.ras.launched.emplace_back(n, ras_op);
      in_ras = true, ras_no_data = false, hit = true;
    }
    if (scan.has<"operation counts">() && scan.has<"have different ">()) {
      const size_t a = line.find("have different ") + 15, b = line.find(" operation counts");
      if (b != std::string::npos && b > a) log.ras.op = line.substr(a, b - a);
      hit = true;
    }
    if (scan.has<"Missing communicator data from">()) in_ras = true, ras_no_data = true, hit = true;
    if (in_ras && scan.has<"Rank ">() && scan.has<" -- GPU ">()) {
      const int64_t r = int_after(line, "Rank ");
      if (r >= 0 && ras_no_data)
        log.ras.no_data.insert(static_cast<int>(r));
      else if (r >= 0)
        log.ras.listed[static_cast<int>(r)] = ras_op;
      if (log.ras.lines.size() < 8) log.ras.lines.push_back(line.substr(0, 200));
      hit = true;
    }
    if (scan.has<"Desync">() || scan.has<"desync">()) hit = true;
    if (scan.has<"lagging ranks">() || scan.has<"joined but didn't finish">() || scan.has<"finished collective #">() ||
        scan.has<" is not joined">() || scan.has<"missing ranks: {">()) {
      // "[7] finished collective #182, …": the "[7] " came off as a rank prefix, and names the rank.
      if ((line.starts_with("finished collective") || line.starts_with("joined but didn't finish")) && fl.rank >= 0)
        log.lagging_ranks.insert(fl.rank);
      desync(line);
      hit = true;
    }
    if (scan.has<"mismatch between collectives">() || scan.has<"CollectiveFingerPrint">()) {
      if (log.mismatches.size() < 4) log.mismatches.push_back(line.substr(0, 600));
      hit = true;
    }
    if (scan.has<"ProcessGroupNCCL">() || scan.has<"torch.distributed">() || scan.has<"c10d">()) hit = true;
    if (scan.has<"server socket has failed to">()) store_bind_facts(line, log.store_bind), hit = true;
    const bool known_error = error_line(fl);
    // (torchelastic's "Worker group FAILED. … will restart worker group" is a restart, judged by how it ends)
    // (and Fabric Manager's service exiting after it found no NVSwitch to manage: "… failed! Exit code: 1")
    const auto fm_not_needed = [&] {
      return (scan.has<"fabricmanager">() || scan.has<"fabric manager">()) &&
             std::any_of(log.errors.begin(), log.errors.end(),
                         [](const ErrorSeen& e) { return e.id == "fabric-manager-not-needed"; });
    };
    if (!known_error && log.failure_reports.size() < 2 && capital_failure(line) && !fm_not_needed() &&
        line.find("will restart worker group") == std::string::npos)
      log.failure_reports.push_back(line.substr(0, 200));
    // NCCL going on without a feature that failed to start (CollNet/SHARP, a plugin): the failure before it was
    // survived.
    if (warn_line &&
        ((has(line, " using ") && has(line, " instead")) || has(line, "falling back") || has(line, "Falling back"))) {
      if (log.fallbacks.size() < 4) log.fallbacks.push_back(line.substr(0, 200));
      log.last_fallback_line = fl.number;
    }
    // aws-ofi-nccl giving up at its initialisation: NCCL goes on without it (on its IB or socket transport).
    if (scan.has<"NET/OFI">() && (has(line, "initialization failed") || has(line, "Failed to initialize")))
      log.net_plugin_init_failed = true;
    if (warn_line && !known_error) ++log.unknown_warn_lines;
    return hit || known_error || nccl_line;
  }
};

}  // namespace

NcclLog parse_nccl_log(const std::string& text, const std::string& origin) {
  NcclLog log;
  log.origin = origin;
  Reader reader{log};
  for (LineWindow lines(text); !lines.empty(); lines.advance()) {
    const auto& fl = lines[0];
    ++log.lines;
    // A hard-wrapped line: the watchdog's message or a table row continued on the next line(s).
    std::string joined;
    const std::string* with_next = &fl.text;
    const bool open_work = has(fl.text, "WorkNCCL(") && !has(fl.text, "milliseconds");
    bool short_row = false;
    if (starts_with_digit(fl.text) && lines.ahead() >= 1 && starts_with_digit(lines[1].text)) {
      // A row cut after a few columns whose continuation starts with a time, not a new size and count. The next line
      // is split only when this one is short (most rows are whole).
      const auto here = words(fl.text);
      if (here.size() >= 4 && here.size() < 12 && is_integer(here[0])) {
        const auto next = words(lines[1].text);
        short_row = next.size() >= 2 && next.size() + here.size() >= 12 &&
                    !(is_integer(next[0]) && is_integer(next[1]) && next.size() >= 8);
      }
    }
    if (open_work || short_row) {
      joined = fl.text;
      for (size_t k = 1; k <= (open_work ? 3 : 1) && k <= lines.ahead(); ++k) {
        // The watchdog's message is often wrapped inside a word ("Nume" / "lOut=1"): rejoin without a space.
        joined += (open_work ? "" : " ") + lines[k].text;
        if (open_work && has(joined, "milliseconds")) break;
      }
      with_next = &joined;
    }
    try {
      if (reader.line(fl, *with_next)) ++log.recognized;
    } catch (const std::exception&) {  // stoi/stoll on digits out of range
    }
  }
  if (log.nnodes == 0) log.nnodes = static_cast<int>(std::max(log.hosts.size(), log.test_hosts.size()));
  if (reader.sigbus_line > 0 && reader.nccl_frames &&
      std::none_of(log.errors.begin(), log.errors.end(), [](const ErrorSeen& e) { return e.id == "shm-error"; })) {
    ErrorSeen e;
    e.id = "shm-error";
    e.count = 1;
    e.first_line = e.last_line = reader.sigbus_line;
    e.example = reader.sigbus_text;
    log.errors.push_back(std::move(e));
  }
  if (log.recognized == 0)
    throw_bad_input(origin +
                    ": no NCCL, nccl-tests or PyTorch distributed line in the file (NCCL_DEBUG=INFO output, "
                    "an *_perf table, a ProcessGroupNCCL/torchrun log or an NCCL error are read)");
  return log;
}

namespace {
// The PCIe generation of a PCIe card from its name in nccl-tests' device lines (vendor specifications); 0 when the
// name is not a PCIe-only card this table knows (SXM parts go through NVSwitch and are judged above).
int pcie_generation(const std::string& dev) {
  // By whole words of the name ("NVIDIA A10" is not "NVIDIA A100-SXM4-80GB"), and its PCIe marker for parts sold both
  // ways (A100, H100, V100, P100).
  std::string spaced = dev;
  std::replace_if(
      spaced.begin(), spaced.end(), [](char c) { return c == '-' || c == '_'; }, ' ');
  std::set<std::string, std::less<>> w;
  for (const auto word : words(spaced)) w.emplace(word);
  auto any = [&](std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return w.contains(n); });
  };
  const bool pcie = any({"PCIe", "PCIE", "NVL"});
  const bool rtx = w.contains("RTX") || w.contains("GeForce");
  auto series = [&](char first) {  // GeForce RTX 3090, 4090, 5090, …
    return rtx && std::any_of(w.begin(), w.end(), [&](const std::string& x) {
             return x.size() == 4 && x[0] == first && std::all_of(x.begin(), x.end(), ::isdigit);
           });
  };
  if ((pcie && any({"H100", "H200"})) || series('5') || (w.contains("PRO") && w.contains("Blackwell"))) return 5;
  if ((pcie && w.contains("A100")) || any({"A10", "A10G", "A16", "A30", "A40", "A2", "L4", "L40", "L40S"}) ||
      series('3') || series('4') || w.contains("Ada") || (rtx && any({"A4000", "A4500", "A5000", "A5500", "A6000"})))
    return 4;
  if ((pcie && any({"V100", "P100"})) || any({"T4", "P40", "P4"}) || series('2') || any({"TITAN"})) return 3;
  return 0;
}
}  // namespace

std::optional<BusbwExpectation> expected_busbw(const NcclLog& log) {
  if (log.devices.empty()) {  // nothing names the hardware: only the floor of any path between GPUs
    BusbwExpectation e;
    e.hardware = "any GPUs";
    e.typical = 10;
    e.low = 5;
    e.source = "floor for any path between GPUs: even PCIe Gen3 through host memory (SHM) gives ≈10 GB/s busbw";
    return e;
  }
  const std::string dev = log.devices.front();
  auto is = [&](std::string_view w) { return dev.find(w) != std::string::npos; };
  const size_t ranks = log.devices.size();
  const size_t nodes = std::max<size_t>(1, log.test_hosts.size());
  const size_t per_node = ranks / nodes;
  BusbwExpectation e;
  const size_t name = dev.rfind(']');
  e.hardware = fmt::format("{} × {}{}", ranks, name == std::string::npos ? dev : dev.substr(name + 1),
                           nodes > 1 ? fmt::format(" on {} hosts", nodes) : "");
  while (e.hardware.find("  ") != std::string::npos) e.hardware.erase(e.hardware.find("  "), 1);
  const bool nvswitch_gen4 = (is("H100") || is("H200") || is("H20") || is("B200")) && !is("PCIe") && !is("NVL");
  if (nodes == 1 && per_node >= 4 && nvswitch_gen4) {
    e.typical = 370;
    e.low = 0.7 * 370;
    e.known = true;
    e.source =
        "NVLink4 through NVSwitch: ≈370 GB/s busbw (ring; allreduce with NVLS up to ≈480) — sjeaugey, "
        "nccl-tests#212; 476 GB/s 'in the expected range', nccl-tests#290";
    return e;
  }
  if (nodes == 1 && per_node >= 4 && is("A100") && !is("PCIE") && !is("PCIe")) {
    e.typical = 230;
    e.low = 0.7 * 230;
    e.known = true;
    e.source =
        "NVLink3 through NVSwitch (300 GB/s per direction): ≈230 GB/s busbw on 8×A100 SXM (the same scaling "
        "as NVLink4's 450 → 370)";
    return e;
  }
  if (nodes > 1 && per_node >= 8 && nvswitch_gen4) {
    // HGX nodes usually carry one 400 Gb/s NIC per GPU: ≈46–48 GB/s each through NCCL.
    e.typical = 8 * 47;
    e.low = 0.45 * 8 * 47;
    e.known = true;
    e.source =
        "inter-node: ≈46–48 GB/s per NDR 400 Gb/s NIC through NCCL, ≈370–396 GB/s with the 8 NICs of an HGX "
        "node (AddyLaddy, nccl-tests#290 and #319); nodes with fewer or slower NICs scale it down";
    return e;
  }
  if (nodes > 1) {
    // One 100 Gb/s RDMA NIC carries ≈11–12 GB/s; less than that between GPU servers is TCP or a broken path.
    e.typical = 12;
    e.low = 8;
    // A floor this far under any fabric's peak is passed by 32 MB messages already (a 2-node ring moves 32 MB in
    // under 3 ms at 12 GB/s, against tens of µs of latency per step), so shorter sweeps are judged too.
    e.judge_from_bytes = 32ULL << 20;
    e.source =
        "floor between GPU servers: one 100 Gb/s RDMA NIC carries ≈11–12 GB/s through NCCL (400 Gb/s: 46–48, "
        "nccl-tests#290); less is TCP, a single slow NIC or a broken path";
    return e;
  }
  // PCIe-only machines: NCCL's own model of a x16 link (src/graph/topo.cc: Gen3 12, Gen4 24, Gen5 48 GB/s) by the
  // card's PCIe generation. Measured: 4×V100-PCIe 11.2 (Gen3); 3×A100-PCIe ≈20 and 8×RTX 4090 with P2P patched in
  // 20.6 (Gen4); GeForce has no P2P ("GeForce cards do not support P2P", sjeaugey, nccl-tests#287), so traffic goes
  // through host memory: 8×4090 15.0 (Gen4), 8×RTX 5090 28 and 4×5090 35 (Gen5, nccl#1639, "impressed"). Below 35%
  // of the link model is broken (ACS/IOMMU redirecting P2P, a narrowed link), not the no-P2P or cross-socket
  // path (cross-socket rings on older Intel: NCCL models 10 GB/s). PCIe busbw is flat from 2-8 MB on.
  if (nodes == 1)
    if (const auto gen = pcie_generation(dev); gen > 0) {
      const double link = 12.0 * (1 << (gen - 3));
      const bool geforce = is("GeForce") || is("RTX 20") || is("RTX 30") || is("RTX 40") || is("RTX 50");
      e.typical = (geforce ? 0.6 : 0.85) * link;
      e.low = 0.35 * link;
      e.known = true;
      e.judge_from_bytes = 32ULL << 20;
      e.hardware += fmt::format(" (PCIe Gen{} x16{})", gen, geforce ? ", no P2P on GeForce" : "");
      e.source = fmt::format(
          "NCCL's model of a PCIe Gen{} x16 link, {:.0f} GB/s (src/graph/topo.cc); {}; below 35% of the link "
          "model is a broken path",
          gen, link,
          geforce ? "GeForce: no P2P, through host memory ≈60% of it (8×RTX 4090 15 GB/s, 8×RTX 5090 28, nccl#1639)"
                  : "with P2P ≈85% of it (4×V100-PCIe 11.2, 3×A100-PCIe ≈20, nccl-tests#178)");
      return e;
    }
  // Any path between GPUs of one machine, PCIe through host memory included, carries more than this.
  e.typical = 10;
  e.low = 5;
  e.source =
      "floor within one machine: even PCIe Gen3 through host memory (SHM) gives ≈10 GB/s busbw; 8×RTX 5090 on "
      "PCIe give 28 (nccl#1639)";
  return e;
}

nlohmann::json to_json(const NcclLog& log, const std::vector<Finding>& findings) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : log.rows)
    rows.push_back(
        {{"bytes", r.bytes},
         {"count", r.count},
         {"type", r.type},
         {"redop", r.redop},
         {"max_error", r.max_error},
         {"out_of_place",
          {{"time_us", r.time_us[0]}, {"algbw_gbps", r.algbw[0]}, {"busbw_gbps", r.busbw[0]}, {"wrong", r.wrong[0]}}},
         {"in_place",
          {{"time_us", r.time_us[1]}, {"algbw_gbps", r.algbw[1]}, {"busbw_gbps", r.busbw[1]}, {"wrong", r.wrong[1]}}}});
  nlohmann::json tuning = nlohmann::json::array();
  for (const auto& [k, t] : log.tuning)
    tuning.push_back({{"collective", k.first},
                      {"bytes", k.second},
                      {"algo", t.algo},
                      {"proto", t.proto},
                      {"channels", t.channels},
                      {"calls", t.calls},
                      {"varied", t.varied}});
  nlohmann::json timeouts = nlohmann::json::array();
  for (const auto& t : log.timeouts)
    timeouts.push_back({{"op", t.op},
                        {"seq", t.seq},
                        {"rank", t.rank},
                        {"timeout_ms", t.timeout_ms},
                        {"ran_ms", t.ran_ms},
                        {"numel", t.numel},
                        {"numel_out", t.numel_out},
                        {"last_enqueued", t.last_enqueued},
                        {"last_completed", t.last_completed}});
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : log.errors)
    errors.push_back({{"class", e.id},
                      {"count", e.count},
                      {"first_line", e.first_line},
                      {"example", e.example},
                      {"ranks", e.ranks},
                      {"facts", e.facts}});
  nlohmann::json progress = nlohmann::json::array();
  for (const auto& [r, p] : log.progress)
    progress.push_back({{"rank", r}, {"last_enqueued", p.last_enqueued}, {"last_completed", p.last_completed}});
  nlohmann::json graphs = nlohmann::json::array();
  for (const auto& g : log.graphs)
    graphs.push_back({{"pattern", g.pattern},
                      {"crossnic", g.crossnic},
                      {"channels", g.channels},
                      {"bw_intra_gbps", g.bw_intra},
                      {"bw_inter_gbps", g.bw_inter},
                      {"type", g.type}});
  return {{"schema", kNcclLogSchema},
          {"origin", log.origin},
          {"test", log.test},
          {"tests_version", log.tests_version},
          {"devices", log.devices},
          {"rows", rows},
          {"avg_busbw_gbps", log.avg_busbw ? nlohmann::json(*log.avg_busbw) : nlohmann::json(nullptr)},
          {"max_bytes", log.max_bytes},
          {"out_of_bounds", log.out_of_bounds},
          {"validation_off", log.validation_off},
          {"nccl_version", log.nccl_version},
          {"nranks", log.nranks},
          {"nnodes", log.nnodes},
          {"network", log.network},
          {"init_complete", log.init_complete},
          {"graphs", graphs},
          {"coll_channels", log.coll_channels},
          {"nvls_channels", log.nvls_channels},
          {"transports", log.transports},
          {"env", log.env},
          {"socket_fallback", log.socket_fallback},
          {"ibverbs_missing", log.ibverbs_missing},
          {"nvls", log.nvls},
          {"ib_completion_status", log.ib_completion_status},
          {"warnings", log.warnings},
          {"errors", errors},
          {"tuning", tuning},
          {"timeouts", timeouts},
          {"progress", progress},
          {"lagging_ranks", log.lagging_ranks},
          {"desync", log.desync},
          {"mismatches", log.mismatches},
          {"ranks_seen", log.ranks_seen},
          {"lines", log.lines},
          {"lines_read", log.recognized},
          {"findings", findings}};
}

std::string ranks_text(const std::set<int>& ranks) {
  std::string s;
  size_t n = 0;
  for (int r : ranks) {
    if (n++ == 12) return s + ", …";
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  }
  return s;
}

}  // namespace gsq::topo
