// Logs as users paste them: every line may carry what a launcher or logger put in front of it (Open MPI
// --tag-output "[1,0]<stdout>:", Slurm --label "3: ", torchrun "[rank3]:"/"[default3]:", Ray and vLLM
// "(RayWorkerWrapper pid=1234)", "(VllmWorker rank=2 pid=7)", kubectl "[pod/x/y]", docker compose "svc-1  | ",
// pdsh/DeepSpeed "host: ", ISO and Python-logging timestamps, vLLM's "INFO 05-14 10:11:12 [file.py:12]").
// framed_lines() strips those, remembers the rank a prefix names, and drops Open MPI tags that interleaved output left
// in the middle of a line. Hand-written scanning, no regular expressions: it runs on every line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gsq::topo {

struct FramedLine {
  std::string text;   // the line as its program printed it
  int rank = -1;      // the rank a launcher prefix or "[Rank N]" names; -1 when none does
  size_t number = 0;  // 1-based line number in the file
};

// One line without the prefixes in front of it; `rank` is set when one of them names a rank.
[[nodiscard]] std::string strip_prefixes(std::string_view line, int& rank);

// Every line of the text, framed; carriage returns and a line's trailing spaces removed.
[[nodiscard]] std::vector<FramedLine> framed_lines(const std::string& text);

}  // namespace gsq::topo
