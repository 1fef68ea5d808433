"""Calibration pairs for a CNN's precision fix: torchvision CNNs at PyTorch's defaults (TF32 convolutions, fp32
activations, fp32 matmuls) → bf16 autocast, inference and training, on models other than the held-out sets' (the
held-out `bf16_resnet50_train` of bench/realmodels/heldout.py stays out). What autocast does to each kernel class of a
CNN step (TF32 convolutions, cuDNN's layout conversions, batch norm, the elementwise rest) is read from their
torch.profiler recordings by bench/realmodels/cnn_precision.py, which also scores the prediction made from those ratios
on each pair with the ratios of the others (leave one out).

Registered into pairs.py's table with set "cnn-bf16" (`python3 pairs.py list cnn-bf16`); measured like every pair:
  PAIRS="$(python3 bench/realmodels/pairs.py list cnn-bf16 | awk '{print $1}')" bash bench/device/realmodels.sh measure"""
import torch

# (torchvision model, batch for inference, batch for training): CNN families of different shapes (plain residual,
# bottleneck, dense, depthwise-separable, inverted residual with squeeze-excite, ConvNeXt's 7×7 depthwise, RegNet).
MODELS = (("resnet18", 128, 128), ("resnet101", 64, 32), ("densenet121", 64, 32), ("mobilenet_v3_large", 128, 64),
          ("efficientnet_b2", 64, 32), ("convnext_small", 64, 32), ("regnet_x_3_2gf", 64, 64), ("vgg11_bn", 64, 32))


def register(p):
    """Adds the calibration pairs to p.PAIRS; p is the pairs module (its helpers: tv_model, images, autocast_train_pair)."""
    dev = p.dev

    def infer_pair(name, batch):
        model = p.tv_model(name).eval()
        x = p.images(batch).to(dev)

        def make(bf16):
            def step():
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                    return model(x)

            return step

        return make(False), make(True)

    for name, bi, bt in MODELS:
        p.pair(f"cnnbf16_{name}_infer", "precision", "", "infer",
               f"{name} inference b{bi}, PyTorch's defaults (TF32 convolutions, fp32 activations) → bf16 autocast",
               set_name="cnn-bf16")(lambda name=name, bi=bi: infer_pair(name, bi))
        p.pair(f"cnnbf16_{name}_train", "precision", "", "train",
               f"{name} SGD training b{bt}, PyTorch's defaults → bf16 autocast", set_name="cnn-bf16")(
                   lambda name=name, bt=bt: p.autocast_train_pair(name, bt))
