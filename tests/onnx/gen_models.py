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
