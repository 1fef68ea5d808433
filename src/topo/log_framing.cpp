// Launcher and logger prefixes off every line (see log_framing.hpp).
#include "topo/log_framing.hpp"

#include <cctype>
#include <charconv>

namespace gsq::topo {

namespace {

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads digits at s[i..]; returns the value and moves i, or -1 when there are none.
long read_int(std::string_view s, size_t& i) {
  const size_t start = i;
  while (i < s.size() && digit(s[i])) ++i;
  if (i == start || i - start > 9) return -1;
  long v = 0;
  std::from_chars(s.data() + start, s.data() + i, v);
  return v;
}

size_t skip_spaces(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

// Open MPI --tag-output: "[1,0]<stdout>:" (job, rank); returns the length matched, 0 if none.
size_t mpi_tag(std::string_view s, size_t i, int& rank) {
  const size_t start = i;
  if (i >= s.size() || s[i] != '[') return 0;
  ++i;
  if (read_int(s, i) < 0 || i >= s.size() || s[i] != ',') return 0;
  ++i;
  const long r = read_int(s, i);
  if (r < 0 || !s.substr(i).starts_with("]<")) return 0;
  i += 2;
  for (const std::string_view tag : {"stdout>:", "stderr>:", "stddiag>:"})
    if (s.substr(i).starts_with(tag)) {
      rank = static_cast<int>(r);
      return i + tag.size() - start;
    }
  return 0;
}

// "[rank3]:", "[default3]:", "[Rank 3]:" (torchrun --tee/--log-line-prefix-template and friends).
size_t torchrun_tag(std::string_view s, size_t i, int& rank) {
  const size_t start = i;
  if (i >= s.size() || s[i] != '[') return 0;
  ++i;
  for (const std::string_view w : {"rank", "default", "Rank "})
    if (s.substr(i).starts_with(w)) {
      i += w.size();
      const long r = read_int(s, i);
      if (r < 0 || !s.substr(i).starts_with("]:")) return 0;
      rank = static_cast<int>(r);
      return i + 2 - start;
    }
  return 0;
}

// mpirun's "[155] " (a rank in brackets, then a space), unless NCCL's own "[dev] NCCL" follows.
size_t bracket_rank(std::string_view s, size_t i, int& rank) {
  const size_t start = i;
  if (i >= s.size() || s[i] != '[') return 0;
  ++i;
  const long r = read_int(s, i);
  if (r < 0 || i >= s.size() || s[i] != ']') return 0;
  ++i;
  if (i < s.size() && s[i] != ' ') return 0;
  const size_t next = skip_spaces(s, i);
  if (s.substr(next).starts_with("NCCL ")) return 0;
  rank = static_cast<int>(r);
  return next - start;
}

// A markdown quote "> " (a log pasted into a reply).
size_t quote(std::string_view s, size_t i) {
  return i + 1 < s.size() && s[i] == '>' && s[i + 1] == ' ' ? 2 : (i + 1 == s.size() && s[i] == '>' ? 1 : 0);
}

// Markdown inline code around a pasted line ("`torch.distributed.DistBackendError: …`"): its opening backticks (a
// fence's three too); the closing ones go with it (strip_prefixes).
size_t code_ticks(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && n < 3 && s[i + n] == '`') ++n;
  return n;
}

// Slurm --label "3: " (digits, a colon and a space at the start of the line).
size_t slurm_label(std::string_view s, size_t i, int& rank) {
  const size_t start = i;
  i = skip_spaces(s, i);
  const long r = read_int(s, i);
  if (r < 0 || i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') return 0;
  rank = static_cast<int>(r);
  return i + 2 - start;
}

// "(RayWorkerWrapper pid=1234)", "(pid=1234, ip=10.0.0.1)", "(VllmWorker rank=2 pid=7)", "(raylet)".
size_t paren_tag(std::string_view s, size_t i, int& rank) {
  if (i >= s.size() || s[i] != '(') return 0;
  const size_t close = s.find(')', i);
  if (close == std::string_view::npos || close - i > 120) return 0;
  const auto inside = s.substr(i + 1, close - i - 1);
  if (inside != "raylet" && inside.find("pid=") == std::string_view::npos) return 0;
  if (const size_t at = inside.find("rank="); at != std::string_view::npos) {
    size_t j = at + 5;
    const long r = read_int(inside, j);
    if (r >= 0) rank = static_cast<int>(r);
  }
  return skip_spaces(s, close + 1) - i;
}

// "[pod/name/container] " (kubectl logs --prefix).
size_t pod_tag(std::string_view s, size_t i) {
  if (!s.substr(i).starts_with("[pod/")) return 0;
  const size_t close = s.find(']', i);
  return close == std::string_view::npos ? 0 : skip_spaces(s, close + 1) - i;
}

// ISO or Python-logging timestamps, bracketed or not: "2024-05-01T12:34:56.123Z ", "[2024-05-01 12:34:56,123] ",
// and vLLM's "INFO 05-14 10:11:12 " (with an optional "[file.py:12] " after it).
size_t timestamp(std::string_view s, size_t i) {
  const size_t start = i;
  const bool bracket = i < s.size() && s[i] == '[';
  if (bracket) ++i;
  auto two = [&](char sep) {
    if (i + 2 < s.size() && digit(s[i]) && digit(s[i + 1]) && s[i + 2] == sep) return i += 3, true;
    return false;
  };
  // YYYY-MM-DD
  if (i + 10 <= s.size() && digit(s[i]) && digit(s[i + 1]) && digit(s[i + 2]) && digit(s[i + 3]) && s[i + 4] == '-') {
    i += 5;
    if (!two('-') || i + 1 >= s.size() || !digit(s[i]) || !digit(s[i + 1])) return 0;
    i += 2;
    if (i >= s.size() || (s[i] != 'T' && s[i] != ' ')) return 0;
    ++i;
    if (!two(':') || !two(':') || i + 1 >= s.size() || !digit(s[i]) || !digit(s[i + 1])) return 0;
    i += 2;
    if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
      ++i;
      while (i < s.size() && digit(s[i])) ++i;
    }
    if (i < s.size() && s[i] == 'Z') ++i;
    if (i + 5 < s.size() && (s[i] == '+' || s[i] == '-') && digit(s[i + 1])) i += s[i + 3] == ':' ? 6 : 5;
    if (bracket) {
      if (i >= s.size() || s[i] != ']') return 0;
      ++i;
    }
    if (i < s.size() && s[i] != ' ' && s[i] != '\t') return 0;
    return skip_spaces(s, i) - start;
  }
  return 0;
}

// glog's line header, which PyTorch's C++ and torch.distributed.elastic print: "E0422 05:07:49.013000 204
// torch/distributed/elastic/multiprocessing/api.py:732] " (level, MMDD, time, thread id, file:line, bracket).
size_t glog_header(std::string_view s, size_t i) {
  const size_t start = i;
  if (i + 6 >= s.size() || (s[i] != 'I' && s[i] != 'W' && s[i] != 'E' && s[i] != 'F')) return 0;
  ++i;
  for (int k = 0; k < 4; ++k, ++i)
    if (i >= s.size() || !digit(s[i])) return 0;
  if (i >= s.size() || s[i] != ' ') return 0;
  i = skip_spaces(s, i);
  // hh:mm:ss.micros
  if (i + 8 > s.size() || !digit(s[i]) || s[i + 2] != ':' || s[i + 5] != ':') return 0;
  i += 8;
  while (i < s.size() && (digit(s[i]) || s[i] == '.')) ++i;
  i = skip_spaces(s, i);
  if (read_int(s, i) < 0) return 0;  // the thread id
  i = skip_spaces(s, i);
  // file:line]
  const size_t close = s.find("] ", i);
  if (close == std::string_view::npos || close - i > 200) return 0;
  const auto where = s.substr(i, close - i);
  const size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= where.size() || !digit(where[colon + 1])) return 0;
  return close + 2 - start;
}

size_t vllm_level(std::string_view s, size_t i) {
  const size_t start = i;
  for (const std::string_view level : {"INFO ", "WARNING ", "ERROR ", "DEBUG "})
    if (s.substr(i).starts_with(level)) {
      i += level.size();
      // MM-DD HH:MM:SS
      if (i + 14 > s.size() || !digit(s[i]) || s[i + 2] != '-' || s[i + 5] != ' ' || s[i + 8] != ':' ||
          s[i + 11] != ':')
        return 0;
      i = skip_spaces(s, i + 14);
      if (i < s.size() && s[i] == '[') {
        const size_t close = s.find("] ", i);
        if (close != std::string_view::npos && close - i < 80) i = close + 2;
      }
      return i - start;
    }
  return 0;
}

// "svc-1  | " (docker compose) and "host: " (pdsh, DeepSpeed's launcher) when what follows is an NCCL line
// ("host:pid:tid [dev]"), a table row or a comment; never "RuntimeError: …".
size_t host_tag(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == '_' || s[j] == '.'))
    ++j;
  if (j == i || j - i > 64) return 0;
  if (const size_t k = skip_spaces(s, j); k + 1 < s.size() && s[k] == '|' && s[k + 1] == ' ' && k > j) return k + 2 - i;
  if (j + 1 >= s.size() || s[j] != ':' || s[j + 1] != ' ') return 0;
  const size_t rest = skip_spaces(s, j + 2);
  if (rest >= s.size()) return 0;
  const auto r = s.substr(rest);
  // An NCCL line: host:pid:tid [d] …
  const size_t c1 = r.find(':');
  const size_t sp = r.find(' ');
  const bool nccl = c1 != std::string_view::npos && sp != std::string_view::npos && c1 < sp &&
                    r.substr(0, sp).find(':', c1 + 1) != std::string_view::npos && sp + 1 < r.size() &&
                    r[sp + 1] == '[';
  return nccl || r[0] == '#' || digit(r[0]) || rest > j + 2 ? rest - i : 0;
}

}  // namespace

std::string strip_prefixes(std::string_view line, int& rank, bool* tagged) {
  size_t i = 0;
  bool ticked = false;
  for (int round = 0; round < 6; ++round) {
    const size_t at = i;
    i = skip_spaces(line, i);
    size_t n = 0;
    if ((n = mpi_tag(line, i, rank)) || (n = torchrun_tag(line, i, rank))) {
      if (tagged) *tagged = true;
      i += n;
      continue;
    }
    if ((n = paren_tag(line, i, rank)) || (n = pod_tag(line, i)) || (n = quote(line, i)) ||
        (n = bracket_rank(line, i, rank)) || (n = timestamp(line, i)) || (n = glog_header(line, i)) ||
        (n = vllm_level(line, i)) || (n = slurm_label(line, i, rank)) || (n = host_tag(line, i))) {
      i += n;
      continue;
    }
    if ((n = code_ticks(line, i))) {
      i += n, ticked = true;
      continue;
    }
    i = at;
    break;
  }
  std::string_view rest = line.substr(i);
  if (ticked)
    while (!rest.empty() && (rest.back() == '`' || rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
  std::string out(rest);
  // Output of two ranks interleaved by Open MPI leaves a tag in the middle of a line.
  for (size_t at = out.find("]<std"); at != std::string::npos; at = out.find("]<std", at)) {
    size_t open = out.rfind('[', at);
    int ignored = -1;
    const size_t n = open == std::string::npos ? 0 : mpi_tag(out, open, ignored);
    if (n == 0) {
      at += 5;
      continue;
    }
    out.erase(open, n);
    at = open;
  }
  // "[Rank 3]" / "[PG 0 Rank 3]" / "[PG ID 0 PG GUID 0(default_pg) Rank 3]" in PyTorch's own messages: near the
  // line's start, or further in right after ProcessGroupNCCL's source location (a record glued after a progress bar).
  for (size_t at = out.find("Rank "); rank < 0 && at != std::string::npos; at = out.find("Rank ", at + 5)) {
    const size_t pg = at < 200 ? 0 : out.rfind("ProcessGroupNCCL", at);
    if (at >= 200 && (pg == std::string::npos || at - pg > 80)) continue;
    size_t j = at + 5;
    const long r = read_int(out, j);
    if (r >= 0 && j < out.size() && out[j] == ']') rank = static_cast<int>(r);
  }
  return out;
}

bool LineFramer::next(FramedLine& line) {
  if (done_) return false;
  size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  std::string_view text = text_.substr(pos_, end - pos_);
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.size() > 4096) text = text.substr(0, 4096);  // no tool prints a longer line; reading it costs for nothing
  line.number = ++number_;
  line.rank = -1;
  line.tagged = false;
  line.text = strip_prefixes(text, line.rank, &line.tagged);
  if (end == text_.size()) {
    done_ = true;
    return !line.text.empty();
  }
  pos_ = end + 1;
  return true;
}

}  // namespace gsq::topo
