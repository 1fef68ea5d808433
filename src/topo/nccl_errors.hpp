// The error catalogue of NCCL and PyTorch distributed: what each message family means and the first thing to try,
// matched line by line on substrings (cheap) with the numbers read where a family has them. One table: the reader, the
// findings and the docs all take the entries from here.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gsq::topo {

struct ErrorKind {
  const char* id;                // the class: "ib-completion-error", also the finding's id after "nccl-"
  std::vector<const char*> any;  // the line matches when it holds one of these
  bool fatal;                    // the log records a failure that ends or hangs the job
  const char* meaning;           // one sentence: what it is
  const char* first_try;         // what to do first
  // Not fatal and nothing wrong either: a platform's advisories, a launcher's defaults, a daemon's own start-up lines
  // (its finding is info, not a warning).
  bool advisory = false;
};

[[nodiscard]] const std::vector<ErrorKind>& error_catalogue();
// The catalogue entry of a class id; the id must be one of the catalogue's.
[[nodiscard]] const ErrorKind& error_kind(std::string_view id);

// A family seen in a log: how often, where first, by which ranks, and the numbers its lines carry.
struct ErrorSeen {
  std::string id;
  size_t count = 0;
  size_t first_line = 0, last_line = 0;
  std::string example;  // the first line (at most 300 characters)
  std::set<int> ranks;
  std::map<std::string, std::string> facts;  // "status": "12", "received": "56", "expected": "64", "code": "2"…
  size_t plugin_lines = 0;                   // of `count`, lines of the external network plugin (NET/OFI)
};

// What a c10d store's bind/listen failure line says: "port", and "bind_error" ("port in use": errno 98, EADDRINUSE,
// Windows 10048; "permission denied": errno 13).
void store_bind_facts(std::string_view line, std::map<std::string, std::string>& facts);
// Ranks as the findings print them: "3, 5, 12", the first 12 then "…".
[[nodiscard]] std::string ranks_text(const std::set<int>& ranks);

// The families one line belongs to (most lines: none); `facts` gets what the line says of them.
[[nodiscard]] std::vector<const ErrorKind*> match_errors(std::string_view line,
                                                         std::map<std::string, std::string>& facts);

// NCCL's ncclResult_t codes as its "-> N" return chains print them.
[[nodiscard]] const char* nccl_result_name(int code);

}  // namespace gsq::topo
