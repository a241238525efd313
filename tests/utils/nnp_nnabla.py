"""NNabla's side of tests/utils/test_nnp.cpp (NNabla 1.39, .venv-nnabla).

    nnp_nnabla.py write DIR   NNabla builds the four models, fills every
                              parameter with random values, runs them on
                              random inputs and saves each as DIR/<model>.nnp
                              (nnabla.utils.save.save) with its inputs and
                              outputs in DIR/<model>_io.h5.
    nnp_nnabla.py check DIR   NNabla's NnpLoader loads DIR/<model>_ours.nnp
                              (written by mixgraph), runs it on the inputs of
                              DIR/<model>_io.h5 and compares with the outputs
                              there; exits 1 unless within 1e-5.
    nnp_nnabla.py schema SET  compares utils/nnp/nnabla.proto (compiled by
                              protoc into the descriptor set SET) with
                              NNabla's own schema (nnabla_pb2): every
                              message, field name, number, type and label.
"""
import sys

import h5py
import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
from nnabla.utils.nnp_graph import NnpLoader
from nnabla.utils.save import save

B = 2


def cnn_bn():
    x = nn.Variable((B, 3, 8, 8))
    h = PF.convolution(x, 4, (3, 3), pad=(1, 1), name="conv1")
    h = PF.batch_normalization(h, batch_stat=False, name="bn1")
    h = F.max_pooling(F.relu(h), (2, 2))
    return {"x": x}, PF.affine(h, 10, name="fc")


def resnet_block():
    x = nn.Variable((B, 4, 6, 6))
    h = PF.convolution(x, 4, (3, 3), pad=(1, 1), with_bias=False, name="c1")
    h = F.relu(PF.batch_normalization(h, batch_stat=False, name="bn1"))
    h = PF.convolution(h, 4, (3, 3), pad=(1, 1), with_bias=False, name="c2")
    h = PF.batch_normalization(h, batch_stat=False, name="bn2")
    h = F.relu(F.add2(h, x))
    return {"x": x}, F.average_pooling(h, (2, 2))


def mlp_layer_norm():
    x = nn.Variable((B, 5))
    h = PF.affine(x, 8, name="fc1")
    h = F.tanh(PF.layer_normalization(h, name="ln1"))
    return {"x": x}, F.softmax(PF.affine(h, 3, name="fc2"))


def lstm():
    T, I, H = 4, 3, 5
    x = nn.Variable((B, T, I))
    h0 = nn.Variable((1, 1, B, H))
    c0 = nn.Variable((1, 1, B, H))
    y, _, _ = PF.lstm(F.transpose(x, (1, 0, 2)), h0, c0, training=False)
    return {"x": x, "h0": h0, "c0": c0}, PF.affine(F.mean(y, axis=0), 2)


# model -> (builder, NNabla's parameter format in the .nnp)
MODELS = {"cnn_bn": (cnn_bn, ".h5"), "resnet_block": (resnet_block, ".h5"),
          "mlp_layer_norm": (mlp_layer_norm, ".protobuf"),
          "lstm": (lstm, ".h5")}


def write(directory):
    rng = np.random.RandomState(7)
    for name, (build, parameter_format) in MODELS.items():
        nn.clear_parameters()
        inputs, y = build()
        for k, p in nn.get_parameters(grad_only=False).items():
            if k.endswith("/var"):  # a running variance is positive
                p.d = rng.uniform(0.5, 2.0, p.shape)
            else:
                p.d = rng.uniform(-1, 1, p.shape)
        for v in inputs.values():
            v.d = rng.uniform(-1, 1, v.shape)
        y.forward()
        save("%s/%s.nnp" % (directory, name),
             {"networks": [{"name": "net", "batch_size": B,
                            "outputs": {"y": y}, "names": inputs}],
              "executors": [{"name": "runtime", "network": "net",
                             "data": list(inputs), "output": ["y"]}]},
             parameter_format=parameter_format)
        with h5py.File("%s/%s_io.h5" % (directory, name), "w") as f:
            arrays = [(k, v.d) for k, v in inputs.items()] + [("y", y.d)]
            for i, (k, a) in enumerate(arrays):
                f[k] = a
                f[k].attrs["need_grad"] = np.bool_(False)
                f[k].attrs["index"] = np.int64(i)


def check(directory):
    worst = 0.0
    for name in MODELS:
        nn.clear_parameters()
        net = NnpLoader("%s/%s_ours.nnp" % (directory, name)).get_network(
            "net", batch_size=B)
        with h5py.File("%s/%s_io.h5" % (directory, name), "r") as f:
            for k, v in net.inputs.items():
                v.d = f[k][...]
            y = net.outputs["y"]
            y.forward()
            err = float(np.abs(y.d - f["y"][...]).max())
        print("NNabla runs mixgraph's %s.nnp: max |dy| = %.3g" % (name, err))
        worst = max(worst, err)
    return 0 if worst <= 1e-5 else 1


def fields(file_proto, package):
    out = {}
    for m in file_proto.message_type:
        for f in m.field:
            out[(m.name, f.name)] = (f.number, f.type, f.label,
                                     f.type_name.replace(package, "."),
                                     f.HasField("oneof_index"))
    return out


def schema(descriptor_set):
    from google.protobuf import descriptor_pb2
    from nnabla.utils import nnabla_pb2
    theirs = descriptor_pb2.FileDescriptorProto()
    nnabla_pb2.DESCRIPTOR.CopyToProto(theirs)
    ours = descriptor_pb2.FileDescriptorSet()
    with open(descriptor_set, "rb") as f:
        ours.ParseFromString(f.read())
    a = fields(theirs, ".")
    b = fields(ours.file[0], ".mg.nnp.proto.")
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            print("schema differs at %s.%s: NNabla %s, ours %s"
                  % (key + (a.get(key), b.get(key))))
    print("NNabla's schema: %d fields in %d messages; ours: %d fields"
          % (len(a), len(theirs.message_type), len(b)))
    return 0 if a == b else 1


if __name__ == "__main__":
    mode, path = sys.argv[1:3]
    if mode == "write":
        write(path)
    elif mode == "schema":
        sys.exit(schema(path))
    else:
        sys.exit(check(path))
