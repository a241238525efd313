# Small PyTorch models exported as PyTorch's exporter writes them, for
# tests/utils/test_onnx_pytorch.cpp: random weights, eval mode, opset 17, a
# dynamic batch axis (one model, "lstm_static", at a fixed batch of 3);
# torchvision's MobileNetV3 (small, 10 classes, on 64 x 64 images) among
# them. For each model and each batch size the inputs
# and torch's outputs are written as raw little-endian arrays (float32; bool
# masks as float32 0/1), and manifest.txt lists them:
#
#   case <model> <batch>
#   input <name> <file> <dims...>
#   output <name> <file> <dims...>
#
#   /usr/bin/python3 export_pytorch_models.py OUT_DIR [torchvision]
#
# With "torchvision": one classifier per torchvision family that has
# operators of its own instead (ResNeXt and Wide ResNet are ResNet's, ...),
# on the smallest inputs they take; the transformers (ViT, Swin) and
# ConvNeXt in small configurations of the same classes, VGG and AlexNet
# with their classifier cut down (a tiny image leaves 1 x 1 features).
import os
import sys
import warnings

import numpy as np
import torch
import torchvision
from torch import nn

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
warnings.filterwarnings("ignore")  # the exporter's TracerWarnings
torch.manual_seed(0)
BATCHES = (2, 3)
T = 5  # sequence length


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4,
                                           dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2,
                                         enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class EncoderMasked(Encoder):
    def forward(self, x, mask):
        return self.enc(x, src_key_padding_mask=mask)


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=6, hidden_size=8, num_layers=2,
                        bidirectional=True, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        y, _ = self.rnn(x)  # zero initial states
        return self.fc(y)


class LSTMLast(Recurrent):
    def __init__(self):
        super().__init__(nn.LSTM)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])  # the last step: Gather with index -1


class LSTMState(Recurrent):
    def __init__(self):
        super().__init__(nn.LSTM)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return self.fc(y), h, c


class Masked(nn.Module):
    def forward(self, x, mask):
        a = x.masked_fill(mask, 0.0)
        b = torch.where(mask, x, 0.0)
        c = torch.where(x > 0.3, -1.0, x)  # a scalar on both sides
        return a + 2 * b + c


class HardSwishNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.Hardswish()

    def forward(self, x):
        return self.act(self.conv(x)) + nn.functional.hardsigmoid(x).mean()


def calibrated(m, size, images):
    # torchvision's initialization with running statistics of 0 and 1 makes
    # the activations vanish (MobileNetV3's outputs near 1e-10, whatever the
    # input): set the statistics from one pass over random images, as
    # training would. Fewer images leave some channels with a tiny variance
    # that amplifies rounding (EfficientNet's outputs reached 900).
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.momentum = None  # a plain average
            nn.init.uniform_(mod.weight, 0.5, 1.5)
            nn.init.normal_(mod.bias, 0, 0.1)
        elif isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, 0, mod.in_features ** -0.5)
    m.train()
    with torch.no_grad():
        m(torch.randn(images, 3, size, size))
    return m


def mobilenet_v3():
    torch.manual_seed(1)
    return calibrated(torchvision.models.mobilenet_v3_small(num_classes=10),
                      64, 16)


def small_classifier(m, features):
    # VGG's and AlexNet's 7 x 7 / 6 x 6 pooling and 4096-wide classifier
    # on a 1 x 1 feature map: the same operators, a thousandth the size.
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Dropout(), nn.Linear(features, 32),
                                 nn.ReLU(), nn.Linear(32, 10))
    return m


def torchvision_models():
    tv = torchvision.models
    from torchvision.models.convnext import CNBlockConfig
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer
    made = {
        "resnet18": (lambda: tv.resnet18(num_classes=10), 32),
        "efficientnet_b0": (lambda: tv.efficientnet_b0(num_classes=10), 32),
        "regnet_y_400mf": (lambda: tv.regnet_y_400mf(num_classes=10), 32),
        "shufflenet_v2": (lambda: tv.shufflenet_v2_x0_5(num_classes=10), 32),
        "squeezenet1_1": (lambda: tv.squeezenet1_1(num_classes=10), 48),
        "densenet121": (lambda: tv.densenet121(num_classes=10), 32),
        "googlenet": (lambda: tv.googlenet(num_classes=10, aux_logits=False,
                                           init_weights=True), 32),
        "inception_v3": (lambda: tv.inception_v3(
            num_classes=10, aux_logits=False, init_weights=True), 75),
        "convnext": (lambda: tv.convnext.ConvNeXt(
            [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)],
            num_classes=10), 32),
        "vgg11": (lambda: small_classifier(tv.vgg11(num_classes=10), 512), 32),
        "alexnet": (lambda: small_classifier(tv.alexnet(num_classes=10), 256),
                    63),
        "mnasnet0_5": (lambda: tv.mnasnet0_5(num_classes=10), 32),
        "vit": (lambda: VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=2,
            hidden_dim=32, mlp_dim=64, num_classes=10), 32),
        "swin": (lambda: SwinTransformer(
            patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
            window_size=[4, 4], num_classes=10), 32),
    }
    def make(f, size):
        torch.manual_seed(1)
        return calibrated(f(), size, 32)
    return {k: make(f, s) for k, (f, s) in made.items()}, {
        k: s for k, (_, s) in made.items()}


def lengths_mask(n):
    lengths = [T, 3, 4][:n]
    return torch.arange(T)[None, :] >= torch.tensor(lengths)[:, None]


def inputs(name, n):
    g = torch.Generator().manual_seed(n)
    rand = lambda *s: torch.randn(*s, generator=g)
    if name.startswith("transformer"):
        x = [("x", rand(n, T, 32))]
        return x + [("mask", lengths_mask(n))] if name.endswith("mask") else x
    if name == "lstm_state":
        return [("x", rand(n, 4, 6)), ("h0", rand(4, n, 8)),
                ("c0", rand(4, n, 8))]
    if name in ("lstm", "lstm_static", "gru", "rnn"):
        return [("x", rand(n, 4, 6))]
    if name == "masked":
        return [("x", rand(n, 3, 5)), ("mask", rand(n, 1, 5) > 0)]
    if name == "mobilenet_v3":
        return [("x", rand(n, 3, 64, 64))]
    if name in image_size:
        return [("x", rand(n, 3, image_size[name], image_size[name]))]
    return [("x", rand(n, 3, 6, 6))]


image_size = {}
if sys.argv[2:] == ["torchvision"]:
    models, image_size = torchvision_models()
else:
    models = {
        "transformer": Encoder(),
        "transformer_mask": EncoderMasked(),
        "lstm": Recurrent(nn.LSTM),
        "lstm_static": LSTMLast(),
        "lstm_state": LSTMState(),
        "gru": Recurrent(nn.GRU),
        "rnn": Recurrent(nn.RNN),
        "masked": Masked(),
        "hardswish": HardSwishNet(),
        "mobilenet_v3": mobilenet_v3(),
    }
batch_axis = {"h0": 1, "c0": 1}  # the states are (layers, batch, hidden)
static = {"lstm_static"}  # exported at BATCHES[-1] without a free batch

# Grad mode on: under no_grad, eval mode takes the Transformer's fused fast
# path (aten::_transformer_encoder_layer_fwd), which the exporter cannot
# write; PyTorch's own outputs are computed on the same (unfused) path.
manifest = []
for name, model in models.items():
    model.eval()
    batches = BATCHES[-1:] if name in static else BATCHES
    example = inputs(name, batches[0])
    in_names = [k for k, _ in example]
    out_count = 3 if name == "lstm_state" else 1
    out_names = ["y%d" % k for k in range(out_count)]
    axes = {k: {batch_axis.get(k, 0): "batch"} for k in in_names}
    for k in out_names:
        axes[k] = {1 if k != "y0" else 0: "batch"}
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, tuple(v for _, v in example), path,
                      input_names=in_names, output_names=out_names,
                      dynamic_axes=None if name in static else axes,
                      opset_version=17)
    for n in batches:
        xs = inputs(name, n)
        ys = model(*[v for _, v in xs])
        ys = ys if isinstance(ys, tuple) else (ys,)
        manifest.append("case %s %d" % (name, n))
        for kind, items in (("input", xs), ("output", zip(out_names, ys))):
            for k, v in items:
                f = "%s.b%d.%s.raw" % (name, n, k)
                a = v.detach().numpy().astype(np.float32)
                a.tofile(os.path.join(out_dir, f))
                manifest.append("%s %s %s %s" % (
                    kind, k, f, " ".join(str(d) for d in a.shape)))
with open(os.path.join(out_dir, "manifest.txt"), "w") as m:
    m.write("\n".join(manifest) + "\n")
