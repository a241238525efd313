"""The Python peers of bench_training: the same LeNet and MLP, batch and
threads, trained with Adam on random 1x28x28 images, in whichever of NNabla
(float, half), PyTorch (float, bfloat16 and float16 autocast) and MXNet
(float) are importable. Optional: none is a test dependency; a missing one
is reported and skipped. The configurations take turns in `--rounds`
rounds; a figure is the median step. Prints one line per configuration:

    peer <name> <images per second>

and with --print-steps every timed step (`step <name> <seconds>`) and
`slow <name>` for the configurations too slow to run more than
--slow-steps steps.

bench_training --peers <python> runs this one round at a time between its
own rounds (so the machine's drift falls on ours and the peers alike) and
prints the medians in its table; run alone:

    .venv-nnabla/bin/python benchmarks/python_peers.py --model lenet
"""
import argparse
import os
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="lenet", choices=["lenet", "mlp"])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--slow-steps", type=int, default=1,
                   help="steps, in the first round only, of configurations "
                        "slower than 20 img/s (NNabla's CPU half: about a "
                        "minute a step)")
    p.add_argument("--print-steps", action="store_true",
                   help="also print each timed step: 'step <name> <seconds>' "
                        "(bench_training runs one round at a time, between "
                        "its own, and takes the median of all)")
    p.add_argument("--skip", default="",
                   help="comma-separated configurations to leave out (the "
                        "slow ones after bench_training's first round)")
    return p.parse_args()


def nnabla_configs(model, batch):
    import numpy as np
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S
    from nnabla.ext_utils import get_extension_context

    def build(type_config):
        nn.clear_parameters()
        nn.set_default_context(get_extension_context("cpu",
                                                     type_config=type_config))
        x = nn.Variable((batch, 1, 28, 28))
        t = nn.Variable((batch, 1))
        if model == "lenet":
            h = F.max_pooling(F.relu(PF.convolution(x, 32, (5, 5),
                                                    name="conv1")), (2, 2))
            h = F.max_pooling(F.relu(PF.convolution(h, 64, (5, 5),
                                                    name="conv2")), (2, 2))
            h = F.relu(PF.affine(h, 512, name="fc1"))
            y = PF.affine(h, 10, name="fc2")
        else:
            h = F.relu(PF.affine(x, 1024, name="fc1"))
            h = F.relu(PF.affine(h, 1024, name="fc2"))
            y = PF.affine(h, 10, name="fc3")
        loss = F.mean(F.softmax_cross_entropy(y, t))
        solver = S.Adam(1e-3)
        solver.set_parameters(nn.get_parameters())
        x.d = np.random.rand(*x.shape)
        t.d = np.random.randint(0, 10, t.shape)
        scale = 1.0 if type_config == "float" else 1024.0

        def step():
            solver.zero_grad()
            loss.forward(clear_no_need_grad=True)
            loss.backward(scale, clear_buffer=True)
            if scale != 1.0:
                solver.scale_grad(1.0 / scale)
            solver.update()
        return step

    return [("nnabla f32", build("float")), ("nnabla half", build("half"))]


def torch_configs(model, batch, threads):
    import torch
    torch.set_num_threads(threads)
    if model == "lenet":
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(1024, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 10))
    else:
        net = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(784, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 10))
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    x = torch.rand(batch, 1, 28, 28)
    t = torch.randint(0, 10, (batch,))

    def make(dtype):
        def step():
            opt.zero_grad()
            with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
                loss = torch.nn.functional.cross_entropy(net(x), t)
            loss.backward()
            opt.step()
        return step
    return [("torch f32", make(None)), ("torch bf16 ac", make(torch.bfloat16)),
            ("torch fp16 ac", make(torch.float16))]


def mxnet_configs(model, batch):
    import mxnet as mx
    from mxnet import autograd, gluon
    nn = gluon.nn
    net = nn.HybridSequential()
    if model == "lenet":
        net.add(nn.Conv2D(32, 5, activation="relu"), nn.MaxPool2D(2),
                nn.Conv2D(64, 5, activation="relu"), nn.MaxPool2D(2),
                nn.Dense(512, activation="relu"), nn.Dense(10))
    else:
        net.add(nn.Dense(1024, activation="relu"),
                nn.Dense(1024, activation="relu"), nn.Dense(10))
    net.initialize()
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam",
                            {"learning_rate": 1e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = mx.nd.random.uniform(shape=(batch, 1, 28, 28))
    t = mx.nd.random.randint(0, 10, shape=(batch,)).astype("float32")

    def step():
        with autograd.record():
            loss = loss_fn(net(x), t)
        loss.backward()
        trainer.step(batch)
        mx.nd.waitall()
    return [("mxnet f32", step)]


def main():
    a = parse()
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    configs = []
    for name, make in [("nnabla", lambda: nnabla_configs(a.model, a.batch)),
                       ("torch", lambda: torch_configs(a.model, a.batch,
                                                       a.threads)),
                       ("mxnet", lambda: mxnet_configs(a.model, a.batch))]:
        try:
            configs += make()
        except ImportError as e:
            print("skip %s: not installed (%s)" % (name, e), file=sys.stderr)
        except Exception as e:  # a peer that cannot run here
            print("skip %s: %s" % (name, str(e).splitlines()[0][:200]),
                  file=sys.stderr)
    skip = set(n for n in a.skip.split(",") if n)
    configs = [(n, f) for n, f in configs if n.replace(" ", "_") not in skip]
    samples = {name: [] for name, _ in configs}
    slow = set()
    for name, step in configs:  # warm-up, and find the very slow ones
        t0 = time.perf_counter()
        step()
        if time.perf_counter() - t0 > a.batch / 20.0:
            slow.add(name)
    for r in range(a.rounds):
        for name, step in configs:
            if name in slow and r > 0:
                continue
            for _ in range(a.slow_steps if name in slow else
                           max(1, a.steps // a.rounds)):
                t0 = time.perf_counter()
                step()
                samples[name].append(time.perf_counter() - t0)
    for name, _ in configs:
        key = name.replace(" ", "_")
        if name in slow:
            print("slow %s" % key)
        if a.print_steps:
            for t in samples[name]:
                print("step %s %.6f" % (key, t))
        print("peer %s %.1f" % (key,
                                a.batch / statistics.median(samples[name])))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
