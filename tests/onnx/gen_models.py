#!/usr/bin/python3
# gen_models.py — writes the ONNX models of tests/onnx.sh and PyTorch's outputs
# for them: for each model NAME, NAME.onnx (torch.onnx.export, opset as
# given), NAME.in.INPUT.npy (the inputs, seeded) and NAME.out.OUTPUT.npy
# (what PyTorch computed on them).  Run from this folder with the Python that
# imports torch (/usr/bin/python3 on Debian 12: python3-torch 1.13):
#     /usr/bin/python3 gen_models.py
# The files are committed, so the tests need neither Python nor torch.
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)


def export(name, model, inputs, input_names, output_names, opset=14, dynamic_axes=None):
    model.eval()
    with torch.no_grad():
        outs = model(*inputs)
    if not isinstance(outs, tuple):
        outs = (outs,)
    torch.onnx.export(model, tuple(inputs), name + ".onnx", opset_version=opset,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes)
    for n, t in zip(input_names, inputs):
        np.save("%s.in.%s.npy" % (name, n), t.numpy())
    for n, t in zip(output_names, outs):
        np.save("%s.out.%s.npy" % (name, n), t.numpy())


class MLP(nn.Module):
    """Linear-ReLU-Linear-GELU-Linear on a flattened image, with a
    transpose and a reshape on the way."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 48)
        self.fc2 = nn.Linear(48, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.transpose(1, 2).reshape(x.shape[0], -1)
        h = torch.relu(self.fc1(x))
        h = nn.functional.gelu(self.fc2(h))
        return self.fc3(h)


export("mlp", MLP(), [torch.randn(3, 8, 8)], ["x"], ["y"])
# the same MLP with a symbolic batch, bound by -D batch=N
export("mlp_dyn", MLP(), [torch.randn(5, 8, 8)], ["x"], ["y"],
       dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})


class Tiny(nn.Module):
    """The smallest model with weights: every prefix of it is read by
    tests/onnx.sh (hostile input)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


export("tiny", Tiny(), [torch.randn(2, 4)], ["x"], ["y"])


class Encoder(nn.Module):
    """A small transformer encoder layer (post-norm, GELU MLP)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                                dropout=0.0, activation="gelu",
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


enc = Encoder()
export("encoder14", enc, [torch.randn(2, 5, 16)], ["x"], ["y"], opset=14)
export("encoder17", enc, [torch.randn(2, 5, 16)], ["x"], ["y"], opset=17)


class CNN(nn.Module):
    """Conv-BN-ReLU-MaxPool, a padded strided conv, average pools, a linear
    classifier and a softmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.sigmoid(self.conv2(x))
        x = self.avg(x)
        x = torch.flatten(x, 1)
        return torch.softmax(self.fc(x), dim=1)


cnn = CNN()
with torch.no_grad():  # batch-norm statistics that are not the identity
    cnn.bn1.running_mean.uniform_(-0.5, 0.5)
    cnn.bn1.running_var.uniform_(0.5, 2.0)
export("cnn", cnn, [torch.randn(2, 3, 16, 16)], ["x"], ["y"])


class ResBlock(nn.Module):
    """A ResNet basic block with a strided downsample, then a dilated conv,
    on rows narrower than 16: the importer writes these convolutions as
    matmuls over the output positions (im2col), the 1x1 strided one
    without padding included."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 24, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(24, 24, 3, padding=1)
        self.down = nn.Conv2d(16, 24, 1, stride=2, bias=False)
        self.dil = nn.Conv2d(24, 8, 3, padding=2, dilation=2)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        y = torch.relu(self.conv2(y) + self.down(x))
        return self.dil(y)


torch.manual_seed(1)  # (the models before keep their weights)
export("resblock", ResBlock(), [torch.randn(2, 16, 9, 13)], ["x"], ["y"])


class Ops(nn.Module):
    """Elementwise and view ops the others leave out: Concat, Split, Slice,
    Squeeze/Unsqueeze, Tanh, Sub, Div, Min/Max (clamp), Where, Gather with
    constant indices, ReduceMax/ReduceSum, LogSoftmax, Expand."""

    def forward(self, x, y):
        a, b = torch.split(x, [3, 5], dim=1)
        c = torch.cat([b, a, y[:, 1:4]], dim=1)          # 2 x 11
        d = torch.tanh(c) - c / 3.0
        e = torch.clamp(d, -0.5, 0.5).unsqueeze(0).squeeze(0)
        f = torch.where(e > 0, e, e * 0.1)
        g = f[:, [0, 2, 4]] + f[:, 5:8:2].sum(dim=1, keepdim=True)
        h = torch.log_softmax(g, dim=-1) + g.amax(dim=1, keepdim=True).expand(2, 3)
        return h, torch.abs(c).mean(dim=0)


export("ops", Ops(), [torch.randn(2, 8), torch.randn(2, 6)], ["x", "y"], ["h", "m"])
# the same at opset 11: Split, Squeeze, Unsqueeze and ReduceSum take their
# axes and sizes as attributes there, not inputs
export("ops11", Ops(), [torch.randn(2, 8), torch.randn(2, 6)], ["x", "y"], ["h", "m"], opset=11)


class Unsupported(nn.Module):
    """Ops texc does not convert: CumSum, ArgMax, TopK."""

    def forward(self, x):
        return torch.cumsum(x, 1), torch.argmax(x, 1), torch.topk(x, 2)[0]


torch.onnx.export(Unsupported(), (torch.randn(2, 6),), "unsupported.onnx", opset_version=14,
                  input_names=["x"], output_names=["s", "a", "t"])


# ---------------------------------------------------------------------------
# Hand-made models (onnx.helper) of what PyTorch never writes: the hostile
# inputs of tests/onnx.sh, each with the message it must give, and one with
# external data.
import onnx
from onnx import TensorProto, helper


def save(name, nodes, inputs, outputs, inits=(), opset=14, check=True):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, name + ".onnx")


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


w = helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
# a node reading an initializer that is not there
save("bad_missing", [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
     [vi("x", [4])], [vi("y", [4])], check=False)
# two nodes that read each other's output
save("bad_cycle", [helper.make_node("Relu", ["b"], ["a"], name="first"),
                   helper.make_node("Add", ["a", "x"], ["b"], name="second")],
     [vi("x", [4])], [vi("b", [4])], check=False)
# a negative dim in an initializer
neg = helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
neg.dims[0] = -4
save("bad_negdim", [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
     [vi("x", [4])], [vi("y", [4])], [neg], check=False)
# an input of 2^50 elements
save("bad_hugedim", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [vi("x", [1 << 25, 1 << 25])], [vi("y", [1 << 25, 1 << 25])])
# a shape computed from run-time data
save("bad_runtime_shape", [helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")],
     [vi("x", [4]), vi("s", [1], TensorProto.INT64)], [vi("y", [4])])


def external(name, location, shape=(4,)):
    n = int(np.prod(shape))
    t = helper.make_tensor("w", TensorProto.FLOAT, list(shape), [0.0] * n)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(4 * n))):
        e = t.external_data.add()
        e.key, e.value = k, v
    save(name, [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
         [vi("x", list(shape))], [vi("y", list(shape))], [t], check=False)


external("bad_extdotdot", "../secret.bin")
external("bad_extabs", "/etc/passwd")
external("extdata", "extdata.bin")
# weights of just over --embed-weights' 4 MiB; tests/onnx.sh writes
# big_ext.bin (zeros) beside a copy, so that 4 MiB need not be committed
external("big_ext", "big_ext.bin", (1025, 1024))
np.array([0.5, -1.0, 2.0, 8.0], dtype="<f4").tofile("extdata.bin")
np.save("extdata.in.x.npy", np.array([1.0, 2.0, 3.0, 4.0], dtype="<f4"))
np.save("extdata.out.y.npy", np.array([1.5, 1.0, 5.0, 12.0], dtype="<f4"))


# Semantics ONNX's node tests found missing (their own cases are in
# tests/onnx_nodes.sh), at the edges those tests do not reach: int16
# arithmetic wrapping modulo 2^16; Pad's reflect and edge modes with pads
# that crop on one side; AveragePool with ceil_mode and count_include_pad=1
# (ceil's end padding not counted) and MaxPool's Indices over padding, as
# PyTorch computes them; BatchNormalization in training mode, as ONNX's
# reference computes it.
rs = np.random.RandomState(19)
sx = rs.randn(1, 2, 6, 7).astype(np.float32)
sa = np.array([32767, -32768, 100, -5, 300], np.int16)
sb = np.array([1, -1, 400, 7, 300], np.int16)
bn = [rs.rand(2).astype(np.float32) + 0.5 for _ in range(4)]  # scale, bias, mean, var
pads_r, pads_e = [0, 0, -1, 2, 0, 0, 1, -2], [0, 0, 3, 0, 0, 0, 2, 4]


def np_pad(x, pads, mode):
    r = len(pads) // 2
    y = np.pad(x, [(max(pads[d], 0), max(pads[d + r], 0)) for d in range(r)], mode=mode)
    return y[tuple(slice(max(-pads[d], 0), y.shape[d] - max(-pads[d + r], 0)) for d in range(r))]


tx = torch.from_numpy(sx)
s_ap = torch.nn.functional.avg_pool2d(tx, 3, 2, 1, ceil_mode=True, count_include_pad=True)
s_mp, s_mi = torch.nn.functional.max_pool2d(tx, 3, 2, 1, ceil_mode=True, return_indices=True)
s_mi = s_mi.numpy() + (np.arange(2) * 6 * 7).reshape(1, 2, 1, 1)  # ONNX's are flat over x
mean, var = sx.mean(axis=(0, 2, 3)), sx.var(axis=(0, 2, 3))
bshape = (1, 2, 1, 1)
sem_out = {
    "s": (sa + sb).astype(np.int32),  # int16 data; texc writes its i32
    "r": np_pad(sx, pads_r, "reflect"),
    "e": np_pad(sx, pads_e, "edge"),
    "ap": s_ap.numpy(),
    "mp": s_mp.numpy(),
    "mi": s_mi.astype(np.int32),
    "bn": ((sx - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5) *
           bn[0].reshape(bshape) + bn[1].reshape(bshape)).astype(np.float32),
    "rm": (bn[2] * 0.9 + mean * 0.1).astype(np.float32),
}
pool = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
save("semantics",
     [helper.make_node("Add", ["a", "b"], ["s"]),
      helper.make_node("Pad", ["x", "pads_r"], ["r"], mode="reflect"),
      helper.make_node("Pad", ["x", "pads_e"], ["e"], mode="edge"),
      helper.make_node("AveragePool", ["x"], ["ap"], count_include_pad=1, **pool),
      helper.make_node("MaxPool", ["x"], ["mp", "mi"], **pool),
      helper.make_node("BatchNormalization", ["x", "bs", "bb", "bm", "bv"], ["bn", "rm", ""],
                       training_mode=1)],
     [vi("x", list(sx.shape)), vi("a", [5], TensorProto.INT16), vi("b", [5], TensorProto.INT16)],
     [vi(n, list(v.shape), TensorProto.INT16 if n == "s" else TensorProto.INT64 if n == "mi"
         else TensorProto.FLOAT) for n, v in sem_out.items()],
     [helper.make_tensor("pads_r", TensorProto.INT64, [8], pads_r),
      helper.make_tensor("pads_e", TensorProto.INT64, [8], pads_e)] +
     [helper.make_tensor(n, TensorProto.FLOAT, [2], v) for n, v in zip(["bs", "bb", "bm", "bv"], bn)],
     opset=15)
for n, v in (("x", sx), ("a", sa), ("b", sb)):
    np.save("semantics.in.%s.npy" % n, v)
for n, v in sem_out.items():
    np.save("semantics.out.%s.npy" % n, v)
# an empty graph input a stage would read (a sum over its empty dim): an error
save("bad_empty", [helper.make_node("ReduceSum", ["x"], ["y"], name="sum", axes=[0])],
     [vi("x", [0, 3])], [vi("y", [1, 3])], opset=11)
