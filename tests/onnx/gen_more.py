#!/usr/bin/python3
# gen_more.py — writes the models tests/onnx.sh gained after gen_models.py
# (apart from it, so that the models that one writes stay as they are):
#   - run-time dims (-D NAME=LO..HI): each model exported once with
#     dynamic_axes, and PyTorch's outputs at several sizes,
#     NAME.in.x.SIZES.npy and NAME.out.y.SIZES.npy (SIZES: the dynamic
#     dims' sizes joined by '_');
#   - nn.LayerNorm alone at opsets 14 (PyTorch's decomposed chain) and 17
#     (LayerNormalization), NAME.in.x.npy and NAME.out.y.npy.
# Run from this folder with the Python that imports torch (python3-torch
# 1.13):
#     /usr/bin/python3 gen_more.py
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(19)


def export(name, model, example, dynamic, sizes, opset=14):
    """Exports MODEL on EXAMPLE with DYNAMIC ({axis: name} of x and y),
    then runs it on an input of each shape in SIZES."""
    model.eval()
    torch.onnx.export(model, (example,), name + ".onnx", opset_version=opset,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": dynamic, "y": dynamic})
    for shape in sizes:
        x = torch.randn(*shape)
        with torch.no_grad():
            y = model(x)
        tag = "_".join(str(shape[a]) for a in sorted(dynamic))
        np.save("%s.in.x.%s.npy" % (name, tag), x.numpy())
        np.save("%s.out.y.%s.npy" % (name, tag), y.numpy())


class MLP(nn.Module):
    """A flattened image through Linear-ReLU-Linear-GELU-Linear:
    x.view(x.size(0), -1) is Shape, Gather, Unsqueeze, Concat, Reshape."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(48, 40)
        self.fc2 = nn.Linear(40, 24)
        self.fc3 = nn.Linear(24, 10)

    def forward(self, x):
        h = x.view(x.size(0), -1)
        h = torch.relu(self.fc1(h))
        h = nn.functional.gelu(self.fc2(h))
        return torch.softmax(self.fc3(h), dim=1)


# batch in 1..64: the ends, odd sizes
export("mlp_rt", MLP(), torch.randn(5, 3, 4, 4), {0: "batch"},
       [(1, 3, 4, 4), (2, 3, 4, 4), (7, 3, 4, 4), (13, 3, 4, 4), (64, 3, 4, 4)])


class Encoder(nn.Module):
    """A transformer encoder layer (post-norm, GELU MLP), batch first."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                                dropout=0.0, activation="gelu",
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


# batch in 1..4 and seq in 1..16: PyTorch's attention views its [seq,
# batch, 16] as [seq * batch, 16] for the output projection, which texc
# keeps in its rows' dims (ops.c, held_rows)
export("encoder_rt", Encoder(), torch.randn(2, 5, 16), {0: "batch", 1: "seq"},
       [(1, 1, 16), (1, 16, 16), (2, 5, 16), (3, 7, 16), (4, 16, 16), (4, 1, 16)])


class Positions(nn.Module):
    """x + a learned embedding of torch.arange(x.size(1)): the positions
    are a constant whose size is the sequence's."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding(32, 8)

    def forward(self, x):
        return x + self.pos(torch.arange(x.size(1)))


export("positions_rt", Positions(), torch.randn(2, 5, 8), {1: "seq"}, [])


class Centered(nn.Module):
    """x - x.mean(0): the batch's size as a value (the mean's divisor),
    which a run-time dim cannot be."""

    def forward(self, x):
        return x - x.mean(0)


export("centered_rt", Centered(), torch.randn(3, 4), {0: "batch"}, [])


class Norm(nn.Module):
    """nn.LayerNorm over the last axis of [4, 6, 48], with a gain and a
    bias that are not 1 and 0."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(48)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.norm(x)


norm = Norm().eval()
x = torch.randn(4, 6, 48) * 3 + 1
with torch.no_grad():
    y = norm(x)
for opset in (14, 17):
    name = "layernorm%d" % opset
    torch.onnx.export(norm, (x,), name + ".onnx", opset_version=opset, input_names=["x"],
                      output_names=["y"])
    np.save(name + ".in.x.npy", x.numpy())
    np.save(name + ".out.y.npy", y.numpy())


class Ramp(nn.Module):
    """x + arange(x.size(0)) as a column: a folded constant, a weight,
    whose shape is the run-time dim's."""

    def forward(self, x):
        return x + torch.arange(x.size(0), dtype=torch.float32).unsqueeze(1) * torch.ones(1, 4)


export("ramp_rt", Ramp(), torch.randn(3, 4), {0: "n"}, [])
