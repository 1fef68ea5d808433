#include "analyze/fix_findings.hpp"

#include "analyze/analysis.hpp"
#include "analyze/text.hpp"
#include "analyze/trace_facts.hpp"
#include "analyze/trace_finding.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gsq::analyze::detail {

void FixSignals::observe(const Event& e, const std::string& n, const std::string& op) {
  if (is_layout_transpose(n)) convert_ns += e.dur_ns;
  if (is_nchw_batch_norm(n)) nchw_bn_ns += e.dur_ns;
  if (is_fp32_gemm(n)) fp32_gemm_ns += e.dur_ns;
  // The single-tensor optimizer ops by their CPU op, or, in a recording without PyTorch's ops (`gpusqueeze trace`),
  // by the kernel each instantiates (ATen's addcdiv_cuda_kernel, addcmul_cuda_kernel, lerp_{scalar,tensor}_kernel).
  const bool optim_op = op.empty() ? n.find("addcdiv_cuda_kernel") != std::string::npos ||
                                         n.find("addcmul_cuda_kernel") != std::string::npos ||
                                         n.find("lerp_scalar_kernel") != std::string::npos ||
                                         n.find("lerp_tensor_kernel") != std::string::npos
                                   : op == "aten::addcdiv_" || op == "aten::addcmul_" || op == "aten::lerp_";
  if (optim_op) optim_ns += e.dur_ns, ++optim_kernels;
  if (op.starts_with("aten::_foreach_") || op.starts_with("aten::_fused_") ||
      n.find("multi_tensor_apply") != std::string::npos)
    multi_tensor_optim = true;
  if (is_attention_softmax_kernel(n) && n.find("fmha") == std::string::npos) softmax_ns += e.dur_ns, ++softmax_kernels;
  if (n.find("fmha") != std::string::npos || n.find("flash") != std::string::npos ||
      n.find("attention") != std::string::npos || n.find("_attn") != std::string::npos)
    fused_attention = true;
}

void fix_findings(const Trace& t, const Analysis& a, const FixSignals& s, int64_t kernel_sum, double wall,
                  int64_t wall_ns, std::vector<Finding>& fs) {
  const double w = wall;  // the share each saving is of
  const double steps = std::max<double>(1.0, static_cast<double>(a.step_ns.size()));
  if (kernel_sum > 0 && static_cast<double>(s.convert_ns) / static_cast<double>(kernel_sum) > 0.05) {
    // The same model as `--what-if layout`: the conversions go and PyTorch's NCHW batch norms run their channels_last
    // kernels (kNhwcBatchNormRatio); the convolutions' own kernels are taken as unchanged.
    const auto saving = static_cast<int64_t>(static_cast<double>(s.convert_ns) +
                                             (1.0 - kNhwcBatchNormRatio) * static_cast<double>(s.nchw_bn_ns));
    fs.push_back(finding(
        "layout-conversions", static_cast<double>(saving) / w,
        fmt::format("cuDNN converts NCHW tensors to NHWC and back around its convolutions: {} of kernel time",
                    pct(static_cast<double>(s.convert_ns) / static_cast<double>(kernel_sum))),
        {{"conversion_ns", std::to_string(s.convert_ns)}, {"nchw_batch_norm_ns", std::to_string(s.nchw_bn_ns)}}, saving,
        "Convert the model and its inputs to channels_last once at load (model.to(memory_format=torch.channels_last), "
        "x.to(memory_format=torch.channels_last)): the conversions go and convolutions and batch norms run their NHWC "
        "kernels. Time it before keeping it: the NHWC kernels are not faster for every model (RegNetY-1.6GF bf16 was "
        "13% slower in channels_last where ResNet-50 and ResNeXt-50 were 31% and 38% faster).",
        fmt::format(
            "conversion kernels above 5% of kernel time; saving their time and {:.0f}% of PyTorch's NCHW "
            "batch-norm kernels' (their channels_last kernels' cost on bench/results/2026-12-06-h100-realmodels' "
            "ResNet-50 pairs); the convolutions' kernels taken as unchanged",
            100 * (1 - kNhwcBatchNormRatio)),
        wall_ns));
  }
  if (kernel_sum > 0 && static_cast<double>(s.fp32_gemm_ns) / static_cast<double>(kernel_sum) > 0.10) {
    // TF32 runs an fp32 GEMM at kTf32GemmRatio of its time, bf16 autocast at kBf16GemmRatio plus its operands' casts
    // (the real-model corpus's precision pairs). Where the replay judges the critical path, the saving is `--what-if
    // tf32`'s (whatif_report.cpp), which also says whether the step the GEMMs leave is the host's; this GPU-side share
    // is the upper bound given without it.
    const auto saving = static_cast<int64_t>((1.0 - kTf32GemmRatio) * static_cast<double>(s.fp32_gemm_ns));
    fs.push_back(finding(
        "fp32-gemm", static_cast<double>(saving) / w,
        fmt::format("Matrix multiplies run in full fp32 on the CUDA cores (no TF32, no reduced precision): {} of "
                    "kernel time",
                    pct(static_cast<double>(s.fp32_gemm_ns) / static_cast<double>(kernel_sum))),
        {{"fp32_gemm_ns", std::to_string(s.fp32_gemm_ns)}}, saving,
        "torch.set_float32_matmul_precision(\"high\") (TF32 on the tensor cores; `--what-if tf32`) or autocast to "
        "bf16 (torch.autocast(\"cuda\", dtype=torch.bfloat16); `--what-if bf16`: the GEMMs faster again, but each "
        "casts its operands first, on the GPU and on the host); "
        "check the accuracy your model needs.",
        fmt::format("fp32 GEMM kernels above 10% of kernel time; saving: the replay of TF32 GEMMs at {:.3f}× their "
                    "time (bench/results/2026-12-07-cpu-precision: ViT-B/16 and BERT-base training, ConvNeXt-T "
                    "inference), else {:.0f}% of their time",
                    kTf32GemmRatio, 100 * (1 - kTf32GemmRatio)),
        wall_ns));
  }
  // The optimizer's steps as recorded ("Optimizer.step#SGD.step"): 100+ launches a step inside them, without
  // multi-tensor kernels, is one tensor at a time whatever the optimizer (SGD's mul_/add_ launch no addcdiv_).
  const auto ranges = detail::optimizer_step_ranges(t);
  int64_t optimizer_range_ns = 0;
  size_t range_launches = 0;
  for (const auto& r : ranges) optimizer_range_ns += r.end - r.start, range_launches += r.launches;
  const double ranges_n = std::max<double>(1.0, static_cast<double>(ranges.size()));
  const bool by_kernels = static_cast<double>(s.optim_kernels) / steps >= 100;
  const bool by_range = static_cast<double>(range_launches) / ranges_n >= 100;
  if (!s.multi_tensor_optim && (by_kernels || by_range)) {
    // BERT-base AdamW(foreach=False) → fused=True: −39%, mostly launches: one kernel per parameter per op. PyTorch
    // records the optimizer's step as a range ("Optimizer.step#AdamW.step"): its time is what the fused kernel
    // replaces (there, 23 of 67 ms recorded, 18 of 46 ms untraced). Without the range: ~3 launches per
    // addcdiv_/addcmul_/lerp_ kernel.
    const auto per_launch = std::max<int64_t>(a.median_launch_call_ns, 5000);
    const auto saving = static_cast<int64_t>(std::max(
        {static_cast<double>(s.optim_ns), static_cast<double>(s.optim_kernels) * 3.0 * static_cast<double>(per_launch),
         static_cast<double>(optimizer_range_ns)}));
    const std::string optimizer = ranges.empty() ? std::string("AdamW") : ranges.front().optimizer;
    fs.push_back(finding(
        "unfused-optimizer", static_cast<double>(saving) / w,
        by_range ? fmt::format("The optimizer ({}) updates one tensor at a time: {:.0f} kernel launches per step "
                               "inside its step, no multi-tensor kernels",
                               optimizer, static_cast<double>(range_launches) / ranges_n)
                 : fmt::format("The optimizer updates one tensor at a time: {:.0f} addcdiv_/addcmul_/lerp_ kernels "
                               "per step",
                               static_cast<double>(s.optim_kernels) / steps),
        {{"optimizer_kernels", std::to_string(s.optim_kernels)},
         {"optimizer_gpu_ns", std::to_string(s.optim_ns)},
         {"optimizer_step_launches", std::to_string(range_launches)}},
        saving,
        fmt::format("torch.optim.{}(params, fused=True) (or foreach=True, the default when nothing disables it): "
                    "one kernel for all parameters instead of several per parameter.",
                    optimizer),
        "100+ single-tensor optimizer kernels per step (addcdiv_/addcmul_/lerp_, or any launched inside the "
        "optimizer's recorded step) without multi-tensor kernels; saving: the replay of `--what-if optimizer` where "
        "the trace has the optimizer's step ranges and the replay judges the critical path, else (an upper bound) the "
        "optimizer step's recorded range, else their launches (each op launches ~3 kernels per parameter) "
        "(bench/results/2026-12-06-h100-realmodels: BERT-base −39%)",
        wall_ns));
  }
  // Attention computed by hand: softmax kernels over 5% of kernel time, or one a layer (4+ a step: a classifier's
  // softmax or its loss's log-softmax is one or two a step) where short sequences leave them a small share — BERT-large
  // training at 256 tokens, 4.9% of kernel time, fixed by SDPA −14.9% (held-out set 4).
  const double softmax_share = kernel_sum > 0 ? static_cast<double>(s.softmax_ns) / static_cast<double>(kernel_sum) : 0;
  const bool per_layer = static_cast<double>(s.softmax_kernels) / steps >= 4 && softmax_share >= 0.01;
  if (!s.fused_attention && kernel_sum > 0 && (softmax_share > 0.05 || per_layer)) {
    // GPT-2 eager attention → scaled_dot_product_attention: −42% inference, −33% training with softmax ≈10% of kernel
    // time: the fused kernel also drops the score matrix's matmuls, masking and its memory traffic (≈4× softmax).
    const auto saving = static_cast<int64_t>(4.0 * static_cast<double>(s.softmax_ns));
    fs.push_back(finding(
        "unfused-attention", static_cast<double>(saving) / w,
        fmt::format("Attention is computed as matmul + mask + softmax + matmul (no fused attention kernel): {:.0f} "
                    "softmax kernels a step, {} of kernel time",
                    static_cast<double>(s.softmax_kernels) / steps, pct(softmax_share)),
        {{"softmax_ns", std::to_string(s.softmax_ns)}, {"softmax_kernels", std::to_string(s.softmax_kernels)}}, saving,
        "torch.nn.functional.scaled_dot_product_attention (flash/memory-efficient kernels); in transformers "
        "attn_implementation=\"sdpa\" or \"flash_attention_2\" (`--what-if attention`).",
        "softmax kernels above 5% of kernel time, or 4+ a step above 1%, with no fused attention kernel; saving: the "
        "replay of `--what-if attention` (each matmul-softmax-matmul run one op and one kernel costing its GEMMs) "
        "where the replay judges the critical path, else (an upper bound) 4× the softmax kernels' time "
        "(bench/results/2026-12-06-h100-realmodels: GPT-2 −42% inference, −33% training)",
        wall_ns));
  }
}

}  // namespace gsq::analyze::detail
