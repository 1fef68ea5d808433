"""The real-model corpus's fifth held-out set: twelve pairs of the everyday problems of pairs.py and heldout.py, on
models and sizes none of the analyzer's constants came from (torchvision and transformers, random weights). Defined
and committed before any run, then measured and judged with the analyzer as it stood: the first-pass score is the
honest one (bench/results/*-realmodels-heldout-5).

Registered into pairs.py's table with set "heldout5" (`python3 pairs.py list heldout5`); measured like every pair:
  PAIRS="$(python3 bench/realmodels/pairs.py list heldout5 | awk '{print $1}')" bash bench/device/realmodels.sh measure"""
import torch


def register(p):
    """Adds the set's pairs to p.PAIRS; p is the pairs module (its helpers: tv_model, images, dataloader_pair, …)."""
    dev = p.dev

    def pair(name, cls, fix, mode, what):
        return p.pair(name, cls, fix, mode, what, set_name="heldout5")

    sgd = p.sgd_momentum

    def hf(config, model, attn="sdpa", **cfg):
        return p.hf_model((config, model), attn, **cfg)

    # Models none of the earlier sets used: ShuffleNetV2, SqueezeNet 1.1, MNASNet, EfficientNetV2-S, GoogLeNet,
    # VGG-19-BN, Inception v3 (at its own 299×299), Swin-S; DistilBERT, RoBERTa, OPT-350m and a Llama-style decoder
    # from their configs. Layout on CNNs with dense (ungrouped) convolutions only; precision on a transformer only.
    @pair("dl_shufflenet_v2_infer", "dataloader", "host", "infer",
          "ShuffleNetV2 1.0× bf16 inference, b64, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + "
          "pin_memory")
    def _():
        return p.dataloader_pair("shufflenet_v2_x1_0", 64, False)

    @pair("h2d_squeezenet1_1_infer", "copy", "pinned", "infer",
          "SqueezeNet 1.1 bf16 inference, b256, fp32 batch in pageable memory .to(cuda) each step → pinned + "
          "non_blocking")
    def _():
        return p.pinned_infer_pair("squeezenet1_1", 256)

    @pair("h2d_mnasnet1_0_train", "copy", "pinned", "train",
          "MNASNet 1.0 AMP training, b128, fp32 batch in pageable memory .to(cuda) each step → pinned + non_blocking")
    def _():
        return p.pinned_train_pair("mnasnet1_0", 128)

    @pair("cpu_distilbert_infer", "sync", "sync", "infer",
          "DistilBERT bf16 inference (sequence classification), b32 × 128 tokens, each step's predicted classes "
          "copied to the host (.argmax(-1).cpu()) → kept on the GPU and gathered every 64 steps")
    def _():
        m1, m2 = (hf("DistilBertConfig", "DistilBertForSequenceClassification").eval().to(torch.bfloat16)
                  for _ in range(2))
        ids = torch.randint(0, 30522, (32, 128), device=dev)
        return p.host_copy_infer_pair(m1, m2, lambda m: m(input_ids=ids).logits.argmax(-1))

    @pair("item_efficientnet_v2_s_train", "sync", "sync", "train",
          "EfficientNetV2-S AMP training, b32 on device-resident data, loss.item() and accuracy .item() logged every "
          "step → logged every 50 steps")
    def _():
        return p.item_logging_train_pair("efficientnet_v2_s", 32, 1, 50)

    @pair("graphs_googlenet_infer", "launch", "graphs", "infer",
          "GoogLeNet bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
    def _():
        return p.graphs_infer_pair("googlenet")

    @pair("graphs_roberta_infer", "launch", "graphs", "infer",
          "RoBERTa-base bf16 inference (sequence classification) at batch 1 × 64 tokens, eager → the forward "
          "captured in a CUDA graph")
    def _():
        model = hf("RobertaConfig", "RobertaForSequenceClassification").eval().to(torch.bfloat16)
        ids = torch.randint(0, 50265, (1, 64), device=dev)

        def fwd(inp):
            with torch.no_grad():
                return model(input_ids=inp).logits

        return (lambda: fwd(ids)), p.graphed(fwd, ids)

    @pair("cl_vgg19_bn_train", "layout", "layout", "train",
          "VGG-19 with batch norm, AMP training, b32, NCHW → model and input channels_last")
    def _():
        return p.channels_last_train_pair("vgg19_bn", 32)

    @pair("cl_inception_v3_infer", "layout", "layout", "infer",
          "Inception v3 bf16 inference, b64 at 299×299, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("inception_v3", 64, size=299, aux_logits=False, init_weights=True)

    @pair("bf16_swin_s_infer", "precision", "", "infer",
          "Swin-S fp32 inference, b64 (TF32 off, PyTorch's default) → bf16 autocast")
    def _():
        return p.bf16_infer_pair("swin_s", 64)

    @pair("fused_adamw_opt_350m_train", "optimizer", "", "train",
          "OPT-350m (its config) AMP training, b8 × 256 tokens, AdamW(foreach=False) (a kernel per parameter per op) "
          "→ AdamW(fused=True)")
    def _():
        opt_350m = dict(hidden_size=1024, num_hidden_layers=24, ffn_dim=4096, num_attention_heads=16,
                        word_embed_proj_dim=512, do_layer_norm_before=False)
        m1, m2 = (hf("OPTConfig", "OPTForCausalLM", **opt_350m) for _ in range(2))
        o1 = torch.optim.AdamW(m1.parameters(), lr=1e-5, foreach=False)
        o2 = torch.optim.AdamW(m2.parameters(), lr=1e-5, fused=True)
        ids = torch.randint(0, 50272, (8, 256), device=dev)
        kw = dict(input_ids=ids, labels=ids, use_cache=False)
        return p.hf_train_step(m1, o1, **kw), p.hf_train_step(m2, o2, **kw)

    @pair("sdpa_llama_train", "attention", "", "train",
          "Llama-style decoder (hidden 1024, 8 layers, 16 heads, 168M) AMP training, b4 × 1024 tokens, eager "
          "attention → scaled_dot_product_attention")
    def _():
        small = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                     num_attention_heads=16)
        m1 = hf("LlamaConfig", "LlamaForCausalLM", attn="eager", **small)
        m2 = hf("LlamaConfig", "LlamaForCausalLM", attn="sdpa", **small)
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 32000, (4, 1024), device=dev)
        kw = dict(input_ids=ids, labels=ids, use_cache=False)
        return p.hf_train_step(m1, o1, **kw), p.hf_train_step(m2, o2, **kw)
