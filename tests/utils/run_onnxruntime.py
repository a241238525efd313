# Runs ONNX models in onnxruntime for tests/utils/test_onnx.cpp.
#
# Each line of the manifest (argv[1]): model input.raw shape output.raw,
# shape as "2,1,8,8". The input is float32; a model whose input is int64
# gets it converted. The first output is written as float32. A model that
# onnxruntime cannot load or run writes "ERROR <message>" to output.raw.err.
import sys

import numpy as np
import onnxruntime as ort

ort.set_default_logger_severity(3)
for line in open(sys.argv[1]):
    model, inp, shape, out = line.split()
    try:
        s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        spec = s.get_inputs()[0]
        x = np.fromfile(inp, dtype=np.float32).reshape(
            [int(d) for d in shape.split(",")] if shape else [])
        if spec.type == "tensor(int64)":
            x = x.astype(np.int64)
        y = s.run(None, {spec.name: x})[0]
        np.asarray(y, dtype=np.float32).tofile(out)
    except Exception as e:  # reported by the test, case by case
        with open(out + ".err", "w") as f:
            f.write("ERROR %s" % str(e).splitlines()[0][:300])
