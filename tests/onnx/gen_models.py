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


class Unsupported(nn.Module):
    """Ops texc does not convert: CumSum, ArgMax, TopK."""

    def forward(self, x):
        return torch.cumsum(x, 1), torch.argmax(x, 1), torch.topk(x, 2)[0]


export("unsupported", Unsupported(), [torch.randn(2, 6)], ["x"], ["s", "a", "t"])
