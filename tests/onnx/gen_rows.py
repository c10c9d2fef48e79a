#!/usr/bin/python3
# gen_rows.py — writes rows.onnx (its input and PyTorch's output beside it):
# convolutions of stride 1 whose output rows (20 and 18 wide) are at least
# a vector long but not whole vectors, which the importer computes over
# the padded rows laid end to end (onnx/ops.c conv_flat_rows): padding 1,
# a dilation of 2 (padding 2), a 5 x 3 window without bias (padding 2 and
# 1), no padding at all, a residual and ReLUs between, a batch of 2.
# Apart from gen_models.py and gen_more.py, so that their models stay as
# they are.  Run from this folder with the Python that imports torch:
#     /usr/bin/python3 gen_rows.py
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(23)


class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 16, 3, padding=2, dilation=2)
        self.c = nn.Conv2d(16, 16, (5, 3), padding=(2, 1), bias=False)
        self.d = nn.Conv2d(16, 4, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = torch.relu(self.b(h) + h)
        h = torch.relu(self.c(h))
        return self.d(h)


model = Rows().eval()
x = torch.randn(2, 8, 20, 20)
with torch.no_grad():
    y = model(x)
torch.onnx.export(model, (x,), "rows.onnx", opset_version=14, input_names=["x"],
                  output_names=["y"])
np.save("rows.in.x.npy", x.numpy())
np.save("rows.out.y.npy", y.numpy())
