"""The real-model corpus's held-out batch: pairs of the same classes of everyday problem as pairs.py's, on models and
sizes the analyzer was never tuned on (torchvision and transformers, random weights). Measured first with the analyzer
as it stood, so the first-pass score is the honest one; see bench/results/*-realmodels-heldout.

Registered into pairs.py's table (`python3 pairs.py list` shows them with set "heldout"); run them by name:
  python3 pairs.py measure OUT dl_convnext_tiny_train h2d_efficientnet_b0_infer …"""
import torch


def register(p):
    """Adds the held-out pairs to p.PAIRS; p is the pairs module (its helpers: tv_model, hf_model, images, …)."""
    dev = p.dev

    def pair(name, cls, fix, mode, what):
        return p.pair(name, cls, fix, mode, what, held_out=True)

    def fused_optimizer_pair(model_name, optimizer, batch):
        """AMP training of a torchvision model with `optimizer` one tensor at a time (foreach=False), and fused."""
        m1, m2 = p.tv_model(model_name), p.tv_model(model_name)
        o1 = optimizer(m1.parameters(), lr=1e-4, foreach=False)
        o2 = optimizer(m2.parameters(), lr=1e-4, fused=True)
        x, y = p.images(batch).to(dev), p.labels(batch)
        return (lambda: p.vision_train_step(m1, o1, x, y)), (lambda: p.vision_train_step(m2, o2, x, y))

    @pair("dl_convnext_tiny_train", "dataloader", "host", "train",
          "ConvNeXt-T AMP training, b32, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + pin_memory")
    def _():
        return p.dataloader_pair("convnext_tiny", 32, True)

    @pair("dl_mobilenet_v3_large_infer", "dataloader", "host", "infer",
          "MobileNetV3-large bf16 inference, b64, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + "
          "pin_memory")
    def _():
        return p.dataloader_pair("mobilenet_v3_large", 64, False)

    @pair("h2d_efficientnet_b0_infer", "copy", "pinned", "infer",
          "EfficientNet-B0 bf16 inference, b128, fp32 batch in pageable memory .to(cuda) each step → pinned + "
          "non_blocking")
    def _():
        return p.pinned_infer_pair("efficientnet_b0", 128)

    @pair("item_mobilenet_v2_train", "sync", "sync", "train",
          "MobileNetV2 AMP training, b32 on device-resident data, loss.item() and accuracy .item() logged every step "
          "→ no per-step sync")
    def _():
        return p.item_logging_train_pair("mobilenet_v2", 32, 1, 0)

    @pair("graphs_resnet18_infer", "launch", "graphs", "infer",
          "ResNet-18 bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
    def _():
        return p.graphs_infer_pair("resnet18")

    @pair("graphs_gpt2_infer", "launch", "graphs", "infer",
          "GPT-2 (124M) bf16 forward at batch 1 × 16 tokens, no KV cache, eager → the forward captured in a CUDA graph")
    def _():
        model = p.hf_model("gpt2").eval().to(torch.bfloat16)
        ids = torch.randint(0, 50257, (1, 16), device=dev)

        def fwd(inp):
            with torch.no_grad():
                return model(input_ids=inp, use_cache=False).logits

        return (lambda: fwd(ids)), p.graphed(fwd, ids)

    @pair("cl_resnext50_infer", "layout", "layout", "infer",
          "ResNeXt-50 32×4d bf16 inference, b64, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("resnext50_32x4d", 64)

    @pair("cl_regnet_y_1_6gf_infer", "layout", "layout", "infer",
          "RegNetY-1.6GF bf16 inference, b128, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("regnet_y_1_6gf", 128)

    # Held out from the layout model of 2026-12-07 (NCHW batch norms at 0.54×): CNNs it was not built on.
    @pair("cl_resnet101_infer", "layout", "layout", "infer",
          "ResNet-101 bf16 inference, b64, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("resnet101", 64)

    @pair("cl_wide_resnet50_infer", "layout", "layout", "infer",
          "Wide ResNet-50-2 bf16 inference, b64, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("wide_resnet50_2", 64)

    @pair("cl_densenet121_infer", "layout", "layout", "infer",
          "DenseNet-121 bf16 inference, b64, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("densenet121", 64)

    @pair("cl_vgg16_bn_infer", "layout", "layout", "infer",
          "VGG-16 with batch norm, bf16 inference, b32, NCHW → model and input channels_last")
    def _():
        return p.channels_last_infer_pair("vgg16_bn", 32)

    @pair("bf16_gpt2_infer", "precision", "", "infer",
          "GPT-2 (124M) fp32 forward, b16 × 512 tokens (TF32 off, PyTorch's default) → bf16 autocast")
    def _():
        model = p.hf_model("gpt2").eval()
        ids = torch.randint(0, 50257, (16, 512), device=dev)

        def make(bf16):
            def step():
                torch.backends.cuda.matmul.allow_tf32 = False
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                    return model(input_ids=ids, use_cache=False).logits

            return step

        return make(False), make(True)

    @pair("sdpa_bert_train", "attention", "", "train",
          "BERT-base AMP training, b8 × 512 tokens, eager attention → scaled_dot_product_attention")
    def _():
        m1, m2 = p.hf_model("bert", attn="eager"), p.hf_model("bert", attn="sdpa")
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 30522, (8, 512), device=dev)
        y = torch.randint(0, 2, (8,), device=dev)
        return p.hf_train_step(m1, o1, input_ids=ids, labels=y), p.hf_train_step(m2, o2, input_ids=ids, labels=y)

    @pair("fused_adamw_gpt2_train", "optimizer", "", "train",
          "GPT-2 (124M) AMP training, b4 × 256 tokens, AdamW(foreach=False) (a kernel per parameter per op) → "
          "AdamW(fused=True)")
    def _():
        m1, m2 = p.hf_model("gpt2"), p.hf_model("gpt2")
        o1 = torch.optim.AdamW(m1.parameters(), lr=1e-5, foreach=False)
        o2 = torch.optim.AdamW(m2.parameters(), lr=1e-5, fused=True)
        ids = torch.randint(0, 50257, (4, 256), device=dev)
        kw = dict(input_ids=ids, labels=ids, use_cache=False)
        return p.hf_train_step(m1, o1, **kw), p.hf_train_step(m2, o2, **kw)

    # Held out from the findings' constants (fp32-gemm 55% of the GEMMs, unfused-optimizer's launches, unfused-attention
    # 4× softmax) and from the sync and pinned what-ifs: models and sizes none of them was built on. Defined before any
    # run (2026-12-07); first measured with the analyzer as it stood at this commit.
    @pair("bf16_vit_infer", "precision", "", "infer",
          "ViT-B/16 fp32 inference, b64 (TF32 off, PyTorch's default) → bf16 autocast")
    def _():
        return p.bf16_infer_pair("vit_b_16", 64)

    @pair("tf32_bert_train", "precision", "", "train",
          "BERT-base fp32 training, b16 × 128 tokens, full-precision fp32 matmuls → TF32 "
          "(torch.backends.cuda.matmul.allow_tf32)")
    def _():
        m1, m2 = p.hf_model("bert"), p.hf_model("bert")
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 30522, (16, 128), device=dev)
        y = torch.randint(0, 2, (16,), device=dev)

        def make(m, opt, tf32):
            def step():
                torch.backends.cuda.matmul.allow_tf32 = tf32
                loss = m(input_ids=ids, labels=y).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss

            return step

        return make(m1, o1, False), make(m2, o2, True)

    @pair("tf32_convnext_infer", "precision", "", "infer",
          "ConvNeXt-T fp32 inference, b64, TF32 off for matmuls and convolutions → TF32 on for both")
    def _():
        model = p.tv_model("convnext_tiny").eval()
        x = p.images(64).to(dev)

        def make(tf32):
            def step():
                torch.backends.cuda.matmul.allow_tf32 = tf32
                torch.backends.cudnn.allow_tf32 = tf32
                with torch.no_grad():
                    return model(x)

            return step

        return make(False), make(True)

    @pair("fused_adam_resnet50_train", "optimizer", "", "train",
          "ResNet-50 AMP training, b32, Adam(foreach=False) (a kernel per parameter per op) → Adam(fused=True)")
    def _():
        return fused_optimizer_pair("resnet50", torch.optim.Adam, 32)

    @pair("fused_adamw_vit_train", "optimizer", "", "train",
          "ViT-B/16 AMP training, b32, AdamW(foreach=False) → AdamW(fused=True)")
    def _():
        return fused_optimizer_pair("vit_b_16", torch.optim.AdamW, 32)

    @pair("sdpa_bert_large_infer", "attention", "", "infer",
          "BERT-large bf16 inference, b8 × 512 tokens, eager attention → scaled_dot_product_attention")
    def _():
        large = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
        m1 = p.hf_model("bert", attn="eager", **large).eval().to(torch.bfloat16)
        m2 = p.hf_model("bert", attn="sdpa", **large).eval().to(torch.bfloat16)
        ids = torch.randint(0, 30522, (8, 512), device=dev)

        def run(m):
            with torch.no_grad():
                return m(input_ids=ids).logits

        return (lambda: run(m1)), (lambda: run(m2))

    @pair("item_vit_train", "sync", "sync", "train",
          "ViT-B/16 AMP training, b32 on device-resident data, loss.item() logged every step → no per-step sync")
    def _():
        m1, m2 = p.tv_model("vit_b_16"), p.tv_model("vit_b_16")
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True) for m in (m1, m2))
        x, y = p.images(32).to(dev), p.labels(32)
        return ((lambda: p.vision_train_step(m1, o1, x, y, sync_loss=True)),
                (lambda: p.vision_train_step(m2, o2, x, y)))

    @pair("h2d_convnext_tiny_infer", "copy", "pinned", "infer",
          "ConvNeXt-T bf16 inference, b128, fp32 batch in pageable memory .to(cuda) each step → pinned + non_blocking")
    def _():
        return p.pinned_infer_pair("convnext_tiny", 128)

    # Held-out set 3 (2026-12-07): defined before any run and first measured with the analyzer as it stood at this
    # commit (the precision what-ifs and the launch-queue model included). Models, sizes and variants of each class that
    # none of the analyzer's constants came from: an EfficientNet DataLoader, pinned input for training and for a
    # Swin, a host copy of predictions in inference, graphs on EfficientNet and ViT, channels_last training of a
    # ResNet-34, bf16 autocast training of a CNN (convolutions already TF32 by PyTorch's default) and of GPT-2, a fused
    # AdamW over EfficientNet's many small tensors, SDPA on GPT-2 medium.
    @pair("dl_efficientnet_b0_infer", "dataloader", "host", "infer",
          "EfficientNet-B0 bf16 inference, b64, CPU augmentation in the DataLoader: num_workers=0 → 8 workers + "
          "pin_memory")
    def _():
        return p.dataloader_pair("efficientnet_b0", 64, False)

    @pair("h2d_resnet18_train", "copy", "pinned", "train",
          "ResNet-18 AMP training, b128, fp32 batch in pageable memory .to(cuda) each step → pinned + non_blocking")
    def _():
        return p.pinned_train_pair("resnet18", 128)

    @pair("h2d_swin_t_infer", "copy", "pinned", "infer",
          "Swin-T bf16 inference, b128, fp32 batch in pageable memory .to(cuda) each step → pinned + non_blocking")
    def _():
        return p.pinned_infer_pair("swin_t", 128)

    @pair("item_bert_train", "sync", "sync", "train",
          "BERT-base AMP training, b16 × 128 tokens, loss.item() logged every step → no per-step sync")
    def _():
        m1, m2 = p.hf_model("bert"), p.hf_model("bert")
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 30522, (16, 128), device=dev)
        y = torch.randint(0, 2, (16,), device=dev)
        s1, s2 = p.hf_train_step(m1, o1, input_ids=ids, labels=y), p.hf_train_step(m2, o2, input_ids=ids, labels=y)
        return (lambda: s1().item()), s2

    @pair("cpu_resnet50_infer", "sync", "sync", "infer",
          "ResNet-50 bf16 inference, b16, each step's predictions copied to the host (.argmax(1).cpu()) → kept on the "
          "GPU and gathered later")
    def _():
        m1, m2 = (p.tv_model("resnet50").eval().to(torch.bfloat16) for _ in range(2))
        x = p.images(16).to(dev, torch.bfloat16)
        kept = []

        def make(m, to_host):
            def step():
                with torch.no_grad():
                    pred = m(x).argmax(1)
                if to_host:
                    return pred.cpu()
                kept.append(pred)
                if len(kept) > 64:
                    kept.clear()
                return pred

            return step

        return make(m1, True), make(m2, False)

    @pair("graphs_efficientnet_b0_infer", "launch", "graphs", "infer",
          "EfficientNet-B0 bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
    def _():
        return p.graphs_infer_pair("efficientnet_b0")

    @pair("graphs_vit_infer", "launch", "graphs", "infer",
          "ViT-B/16 bf16 inference at batch 1, eager → the forward captured in a CUDA graph")
    def _():
        return p.graphs_infer_pair("vit_b_16")

    @pair("cl_resnet34_train", "layout", "layout", "train",
          "ResNet-34 AMP training, b64, NCHW → model and input channels_last")
    def _():
        return p.channels_last_train_pair("resnet34", 64)

    @pair("bf16_resnet50_train", "precision", "", "train",
          "ResNet-50 fp32 training, b64, PyTorch's defaults (TF32 convolutions, fp32 matmuls) → bf16 autocast")
    def _():
        return p.autocast_train_pair("resnet50", 64)

    @pair("bf16_gpt2_train", "precision", "", "train",
          "GPT-2 (124M) fp32 training, b8 × 256 tokens (TF32 off, PyTorch's default) → bf16 autocast")
    def _():
        m1, m2 = p.hf_model("gpt2"), p.hf_model("gpt2")
        o1, o2 = (torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True) for m in (m1, m2))
        ids = torch.randint(0, 50257, (8, 256), device=dev)

        def make(m, opt, bf16):
            def step():
                torch.backends.cuda.matmul.allow_tf32 = False
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                    loss = m(input_ids=ids, labels=ids, use_cache=False).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss

            return step

        return make(m1, o1, False), make(m2, o2, True)

    @pair("fused_adamw_efficientnet_b0_train", "optimizer", "", "train",
          "EfficientNet-B0 AMP training, b64, AdamW(foreach=False) over its many small parameter tensors → AdamW(fused=True)")
    def _():
        return fused_optimizer_pair("efficientnet_b0", torch.optim.AdamW, 64)

    @pair("sdpa_gpt2_medium_infer", "attention", "", "infer",
          "GPT-2 medium (355M) bf16 forward, b8 × 512 tokens, eager attention → scaled_dot_product_attention")
    def _():
        medium = dict(n_layer=24, n_embd=1024, n_head=16)
        m1 = p.hf_model("gpt2", attn="eager", **medium).eval().to(torch.bfloat16)
        m2 = p.hf_model("gpt2", attn="sdpa", **medium).eval().to(torch.bfloat16)
        ids = torch.randint(0, 50257, (8, 512), device=dev)

        def run(m):
            with torch.no_grad():
                return m(input_ids=ids, use_cache=False).logits

        return (lambda: run(m1)), (lambda: run(m2))
