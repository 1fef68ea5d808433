// Logs as users paste them: every line may carry what a launcher or logger put in front of it (Open MPI
// --tag-output "[1,0]<stdout>:", Slurm --label "3: ", torchrun "[rank3]:"/"[default3]:", Ray and vLLM
// "(RayWorkerWrapper pid=1234)", "(VllmWorker rank=2 pid=7)", kubectl "[pod/x/y]", docker compose "svc-1  | ",
// pdsh/DeepSpeed "host: ", ISO and Python-logging timestamps, vLLM's "INFO 05-14 10:11:12 [file.py:12]").
// LineFramer strips those, remembers the rank a prefix names, and drops Open MPI tags that interleaved output left in
// the middle of a line. Hand-written scanning, no regular expressions: it runs on every line.
#pragma once

#include <string>
#include <string_view>

namespace gsq::topo {

// Whether `w` occurs in `s`: the readers' one substring test.
[[nodiscard]] inline bool has(std::string_view s, std::string_view w) {
  return s.find(w) != std::string_view::npos;
}

struct FramedLine {
  std::string text;  // the line as its program printed it
  int rank = -1;     // the rank a launcher prefix or "[Rank N]" names; -1 when none does
  // A distributed launcher's own rank tag opened it (torchrun's "[rank3]:", Open MPI's "[1,3]<stdout>:").
  bool tagged = false;
  size_t number = 0;  // 1-based line number in the file
};

// One line without the prefixes in front of it; `rank` is set when one of them names a rank.
// `tagged` (where given) is set when one of them is a distributed launcher's rank tag (torchrun, Open MPI).
[[nodiscard]] std::string strip_prefixes(std::string_view line, int& rank, bool* tagged = nullptr);

// The lines of a text, framed one at a time: carriage returns, a line's trailing spaces and its prefixes removed. A
// reader holds the few lines it looks at: all the lines of a 100 MB log, as strings, took twice its size in memory and
// a fifth of the time to read it.
class LineFramer {
 public:
  explicit LineFramer(std::string_view text) : text_(text) {}
  // The next line into `line`; false when there is none (an empty last line, after the file's final newline, is none).
  bool next(FramedLine& line);

 private:
  std::string_view text_;
  size_t pos_ = 0, number_ = 0;
  bool done_ = false;
};

}  // namespace gsq::topo
