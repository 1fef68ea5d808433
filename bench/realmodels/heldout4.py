"""The real-model corpus's fourth held-out set: twelve pairs of the everyday problems of pairs.py and heldout.py, on
models and sizes none of the analyzer's constants came from (torchvision and transformers, random weights). Defined
and committed before any run, then measured and judged with the analyzer as it stood: the first-pass score is the
honest one (bench/results/*-realmodels-heldout-4).

Registered into pairs.py's table with set "heldout4" (`python3 pairs.py list heldout4`); measured like every pair:
  PAIRS="$(python3 bench/realmodels/pairs.py list heldout4 | awk '{print $1}')" bash bench/device/realmodels.sh measure"""
import torch


def register(p):
    """Adds the set's pairs to p.PAIRS; p is the pairs module (its helpers: tv_model, hf_model, images, …)."""
    dev = p.dev

    def pair(name, cls, fix, mode, what):
        return p.pair(name, cls, fix, mode, what, set_name="heldout4")

    def amp_train(model, opt, x, y):
        return lambda: p.vision_train_step(model, opt, x, y)

    sgd = p.sgd_momentum

    @pair("dl_resnet34_train", "dataloader", "host", "train",
          "ResNet-34 AMP training, b64, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + pin_memory")
    def _():
        return p.dataloader_pair("resnet34", 64, True)

    @pair("h2d_mobilenet_v2_infer", "copy", "pinned", "infer",
          "MobileNetV2 bf16 inference, b256, fp32 batch in pageable memory .to(cuda) each step → pinned + non_blocking")
    def _():
        return p.pinned_infer_pair("mobilenet_v2", 256)

    @pair("h2d_densenet121_train", "copy", "pinned", "train",
          "DenseNet-121 AMP training, b64, fp32 batch in pageable memory .to(cuda) each step → pinned + non_blocking")
    def _():
        return p.pinned_train_pair("densenet121", 64)

    @pair("cpu_mobilenet_v3_small_infer", "sync", "sync", "infer",
          "MobileNetV3-small bf16 inference, b8, each step's top-5 classes copied to the host (.topk(5).indices.cpu()) "
          "→ kept on the GPU and gathered every 64 steps")
    def _():
        m1, m2 = (p.tv_model("mobilenet_v3_small").eval().to(torch.bfloat16) for _ in range(2))
        x = p.images(8).to(dev, torch.bfloat16)
        return p.host_copy_infer_pair(m1, m2, lambda m: m(x).topk(5).indices)

    @pair("item_gpt2_train", "sync", "sync", "train",
          "GPT-2 (124M) AMP training, b4 × 256 tokens, loss.item() and grad-norm .item() logged every step → logged "
          "every 50 steps")
    def _():
        m1, m2 = p.hf_model("gpt2"), p.hf_model("gpt2")
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 50257, (4, 256), device=dev)
        count = [0]

        def make(m, opt, every):
            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = m(input_ids=ids, labels=ids, use_cache=False).loss
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
                count[0] += 1
                if count[0] % every == 0:
                    return loss.item(), norm.item()
                return loss

            return step

        return make(m1, o1, 1), make(m2, o2, 50)

    @pair("graphs_resnet50_infer", "launch", "graphs", "infer",
          "ResNet-50 bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
    def _():
        return p.graphs_infer_pair("resnet50")

    @pair("graphs_swin_t_infer", "launch", "graphs", "infer",
          "Swin-T bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
    def _():
        return p.graphs_infer_pair("swin_t")

    @pair("cl_resnet152_train", "layout", "layout", "train",
          "ResNet-152 AMP training, b32, NCHW → model and input channels_last")
    def _():
        return p.channels_last_train_pair("resnet152", 32)

    @pair("cl_regnet_x_8gf_infer", "layout", "layout", "infer",
          "RegNetX-8GF bf16 inference, b64, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("regnet_x_8gf", 64)

    @pair("tf32_swin_t_train", "precision", "", "train",
          "Swin-T fp32 training, b32 (fp32 matmuls, TF32 off: PyTorch's default) → TF32 matmuls "
          "(torch.backends.cuda.matmul.allow_tf32 = True)")
    def _():
        m1, m2 = p.tv_model("swin_t"), p.tv_model("swin_t")
        x, y = p.images(32).to(dev), p.labels(32)
        o1, o2 = sgd(m1), sgd(m2)

        def make(m, opt, tf32):
            def step():
                torch.backends.cuda.matmul.allow_tf32 = tf32
                return p.vision_train_step(m, opt, x, y, bf16=False)

            return step

        return make(m1, o1, False), make(m2, o2, True)

    @pair("fused_sgd_resnet101_train", "optimizer", "", "train",
          "ResNet-101 AMP training, b32, SGD(momentum, foreach=False) → SGD(fused=True)")
    def _():
        m1, m2 = p.tv_model("resnet101"), p.tv_model("resnet101")
        x, y = p.images(32).to(dev), p.labels(32)
        return amp_train(m1, sgd(m1, foreach=False), x, y), amp_train(m2, sgd(m2, fused=True), x, y)

    @pair("sdpa_bert_large_train", "attention", "", "train",
          "BERT-large AMP training, b8 × 256 tokens, eager attention → scaled_dot_product_attention")
    def _():
        large = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
        m1, m2 = p.hf_model("bert", attn="eager", **large), p.hf_model("bert", attn="sdpa", **large)
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 30522, (8, 256), device=dev)
        y = torch.randint(0, 2, (8,), device=dev)
        return p.hf_train_step(m1, o1, input_ids=ids, labels=y), p.hf_train_step(m2, o2, input_ids=ids, labels=y)
