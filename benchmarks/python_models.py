"""PyTorch's twins of bench_models' models: ResNet-18 in its CIFAR form
(3x3 stem, no max pooling, convolutions without bias, batch 32, SGD with
momentum), the LSTM language model (Embed 1000 x 512, two LSTM layers of
512, seq 64, batch 32, Adam) and the GPT-style decoder (4 pre-LN blocks, d 256, 4 heads, MLP
1024 with GELU's tanh form, causal, vocab 1000, seq 128, batch 8, Adam)
and the U-Net of examples/unet_fashion_mnist.cpp (batch 32 of 1x28x28, 11
labels per pixel, Adam) and the main job's LeNet (batch 128 of 1x28x28,
Adam),
the same layers and parameter counts as ours, on random data. Trains each
in float32 and in bf16 autocast (and, with --device cuda, in fp16 autocast
with a GradScaler: PyTorch's AMP) and prints

    params <n>
    step <configuration> <seconds>      (every timed step)

--no-bf16 leaves bf16 autocast out. bench_models --peers <python> runs
it once per round, between its own
rounds; with --only <configuration> it runs that one alone and prints its
peak resident set instead ("rss <at start> <peak>", MiB), for
bench_models --memory. Optional: never a build or test dependency.
"""
import argparse
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="gpt",
                   choices=["resnet18", "gpt", "lstm", "unet", "lenet"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--only", help="run this configuration alone and print "
                   "'rss <at start> <peak>' (MiB) instead of step times")
    p.add_argument("--no-bf16", action="store_true",
                   help="leave bf16 autocast out (a CPU without AVX512-BF16 "
                   "or AMX: its bf16 kernels are reference ones there)")
    return p.parse_args()


def peak_rss_mb():
    """The process's peak resident set so far (VmHWM), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def resnet18(nn):
    def conv_bn(cin, cout, k, stride):
        return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                nn.BatchNorm2d(cout)]

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(*conv_bn(cin, cout, 3, stride),
                                      nn.ReLU(), *conv_bn(cout, cout, 3, 1))
            self.shortcut = (nn.Sequential(*conv_bn(cin, cout, 1, stride))
                             if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return (self.body(x) + self.shortcut(x)).relu()

    layers = [*conv_bn(3, 64, 3, 1), nn.ReLU()]
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for b in range(2):
            layers.append(Block(cin, cout, 2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def gpt(torch, nn):
    vocab, seq, d, heads, hidden, blocks = 1000, 128, 256, 4, 1024, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads)
            self.mlp = nn.Sequential(nn.Linear(d, hidden),
                                     nn.GELU(approximate="tanh"),
                                     nn.Linear(hidden, d))

        def forward(self, h, mask):
            a = self.ln1(h)
            h = h + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
            return h + self.mlp(self.ln2(h))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(blocks))
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
            self.register_buffer("mask", torch.triu(
                torch.full((seq, seq), float("-inf")), diagonal=1))

        def forward(self, tokens):  # (T, B) as ours
            h = self.tok(tokens) + self.pos(
                torch.arange(tokens.shape[0], device=tokens.device))[:, None, :]
            for b in self.blocks:
                h = b(h, self.mask)
            return self.head(self.ln_f(h))

    return Gpt()


def lstm_lm(nn):
    class LstmLm(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(1000, 512)
            self.lstm = nn.LSTM(512, 512, num_layers=2)
            self.head = nn.Linear(512, 1000)

        def forward(self, tokens):  # (T, B) as ours
            return self.head(self.lstm(self.embed(tokens))[0])

    return LstmLm()


def lenet(nn):
    return nn.Sequential(
        nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10))


def unet(torch, nn):
    def conv(cin, cout, k):
        return nn.Conv2d(cin, cout, k, padding=k // 2)

    def separable(cin, cout):  # ours: depthwise 3x3 (with bias), 1x1
        return nn.Sequential(nn.Conv2d(cin, cin, 3, padding=1, groups=cin),
                             nn.ReLU(), conv(cin, cout, 1), nn.ReLU())

    class Unet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2 = conv(1, 16, 3), separable(16, 32)
            self.mid1, self.mid2 = separable(32, 64), separable(64, 64)
            self.dec2, self.dec1 = conv(96, 32, 3), conv(48, 16, 3)
            self.head = conv(16, 11, 1)

        def forward(self, x):
            f = torch.nn.functional
            e1 = self.enc1(x).relu()
            e2 = self.enc2(f.max_pool2d(e1, 2))
            mid = self.mid2(self.mid1(f.max_pool2d(e2, 2)))
            u2 = f.interpolate(mid, size=(14, 14), mode="bilinear",
                               align_corners=False)
            d2 = self.dec2(torch.cat([u2, e2], 1)).relu()
            u1 = f.interpolate(d2, scale_factor=2, mode="nearest")
            d1 = self.dec1(torch.cat([u1, e1], 1)).relu()
            return self.head(d1)

    return Unet()


def main():
    a = parse()
    import torch
    import torch.nn as nn
    rss_start = peak_rss_mb()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.model == "resnet18":
        model = resnet18(nn)
        x = torch.rand(32, 3, 32, 32) * 2 - 1
        t = torch.randint(0, 10, (32,))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    elif a.model == "lenet":
        model = lenet(nn)
        x = torch.rand(128, 1, 28, 28)
        t = torch.randint(0, 10, (128,))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    elif a.model == "unet":
        model = unet(torch, nn)
        x = torch.rand(32, 1, 28, 28)
        t = torch.randint(0, 11, (32, 28, 28))
        opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    elif a.model == "lstm":
        model = lstm_lm(nn)
        x = torch.randint(0, 1000, (64, 32))
        t = torch.randint(0, 1000, (64 * 32,))
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    else:
        model = gpt(torch, nn)
        x = torch.randint(0, 1000, (128, 8))
        t = torch.randint(0, 1000, (128 * 8,))
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    # nn.LSTM keeps two biases per gate (bias_ih and bias_hh) where ours
    # has one: the second, redundant for the count, is left out.
    print("params", sum(p.numel() for n, p in model.named_parameters()
                        if "bias_hh" not in n))
    loss_fn = nn.CrossEntropyLoss()
    cuda = a.device == "cuda"
    model, x, t = model.to(a.device), x.to(a.device), t.to(a.device)
    # The optimizer was made for the parameters before .to(): same objects.
    scaler = torch.amp.GradScaler("cuda") if cuda else None

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def step(dtype):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=dtype or torch.bfloat16,
                            enabled=dtype is not None):
            y = model(x)
        if a.model in ("unet", "lenet"):  # (N, classes, ...): as it comes
            loss = loss_fn(y.float(), t)
        else:
            loss = loss_fn(y.float().reshape(-1, y.shape[-1]), t)
        if dtype is torch.float16:  # fp16 needs the scaler, as ours
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    configurations = [("torch-float32", None),
                      ("torch-bf16-autocast", torch.bfloat16)]
    if a.no_bf16:
        configurations.pop()
    if cuda:
        configurations.insert(1, ("torch-fp16-amp", torch.float16))
    if a.only:  # bench_models --memory: one configuration, its peak RSS
        if a.only not in dict(configurations):
            raise SystemExit("python_models.py: --only %s: not a configuration"
                             " on %s (%s)" % (a.only, a.device, ", ".join(
                                 n for n, _ in configurations)))
        dtype = dict(configurations)[a.only]
        for _ in range(a.warmup + a.steps + 1):
            step(dtype)
        sync()
        print("rss %.1f %.1f" % (rss_start, peak_rss_mb()), flush=True)
        return
    for name, dtype in configurations:
        try:
            for _ in range(a.warmup):
                step(dtype)
        except RuntimeError as e:  # e.g. no bf16 LSTM in oneDNN on AVX2
            print("python_models.py: %s on %s failed, left out: %s" %
                  (name, a.model, str(e).splitlines()[0]), file=sys.stderr)
            continue
        sync()
        for _ in range(a.steps):
            t0 = time.perf_counter()
            step(dtype)
            sync()
            print("step", name, time.perf_counter() - t0, flush=True)


if __name__ == "__main__":
    main()
