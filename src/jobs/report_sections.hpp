// The report's sections, one builder per kind of input (report_sections.cpp); `report` assembles them.
#pragma once

#include "jobs/tune_view.hpp"

#include "analyze/analysis.hpp"
#include "bench/runner.hpp"
#include "program/run.hpp"
#include "report/report.hpp"
#include "topo/multigpu_probe.hpp"
#include "topo/nccl_logs.hpp"
#include "topo/topo_matrix.hpp"
#include "trace/format.hpp"
#include "triage/jitter.hpp"
#include "triage/memory.hpp"
#include "triage/oom.hpp"
#include "triage/trtexec.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gsq::jobs {

[[nodiscard]] report::Section bench_section_of(const bench::Run& run, const std::string& origin);
[[nodiscard]] report::Section analysis_section_of(const analyze::Analysis& a);
[[nodiscard]] report::Section memory_section_of(const triage::MemoryReport& m);
// A pasted CUDA out-of-memory error (`report --memory oom.txt`): each message's figures and what held the memory.
[[nodiscard]] report::Section oom_section_of(const triage::OomReport& r);
[[nodiscard]] report::Section jitter_section_of(const triage::JitterReport& j, const trace::TraceFile& t);
[[nodiscard]] report::Section trt_section_of(const triage::TrtAudit& a, const std::string& origin);
// `kernels --torch --torch-out` (gpusqueeze.torch_compare/1): ours against torch.compile and eager, cudaMemcpy beside.
[[nodiscard]] report::Section torch_section_of(const nlohmann::json& j, const std::string& origin);
// `origin`: "measured now" for the report's own run, else the saved document's name.
[[nodiscard]] report::Section p2p_section_of(const topo::P2pResult& p, const std::string& origin = "measured now");
[[nodiscard]] report::Section topo_section_of(const topo::TopoMatrix& m, const std::string& origin);
[[nodiscard]] report::Section nccl_section_of(const topo::NcclLog& log, const std::string& origin);
[[nodiscard]] report::Section tune_section_of(const TuneView& v);
// `report -- CMD`: the program's untraced steps (step 1), and its traced run analysed with the predicted untraced step
// after each fix (step 2; absent when it was not traced or analysed).
[[nodiscard]] report::Section program_baseline_section_of(const program::ProgramResult& r);
[[nodiscard]] std::optional<report::Section> program_analysis_section_of(const program::ProgramResult& r);
// `sec`, built from a file recorded on `gpu` (empty: the file does not say): when none of the snapshot's GPUs is that
// model, its title and verdict lines say where it was recorded, so its findings are not read as this machine's.
[[nodiscard]] report::Section label_recorded_on(report::Section sec, const std::string& gpu, const gpu::Snapshot& s);

}  // namespace gsq::jobs
