#!/usr/bin/python3
# gen_embedding.py — the models of tests/onnx.sh that read run-time indices
# (texc's gathers), written apart from gen_models.py so that adding them
# rewrote none of the committed models.  Run from this folder with the
# Python that imports torch (/usr/bin/python3: python3-torch 1.13):
#     /usr/bin/python3 gen_embedding.py
# embed: a token and a position embedding (nn.Embedding), summed, then a
#   Linear and a ReLU, as a language model's input layer; PyTorch's
#   outputs.  Gather with int64 ids at run time.
# gathers: Gather along a middle axis with negative indices, and
#   GatherElements with negative ones (outputs g and h, in the order the
#   compiled check of tests/onnx.sh globs them), hand-made (PyTorch writes neither
#   with negative indices); numpy's np.take and take_along_axis give the
#   outputs.
import numpy as np
import torch
import torch.nn as nn
import onnx
from onnx import TensorProto, helper

torch.manual_seed(19)
rs = np.random.RandomState(19)


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 24)
        self.pos = nn.Embedding(7, 24)
        self.fc = nn.Linear(24, 12)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        return torch.relu(self.fc(self.tok(ids) + self.pos(pos)))


model = Embed().eval()
ids = torch.from_numpy(rs.randint(0, 50, size=(3, 7)).astype(np.int64))
with torch.no_grad():
    y = model(ids)
torch.onnx.export(model, (ids,), "embed.onnx", opset_version=14, input_names=["ids"],
                  output_names=["y"])
# the ids as i32, as texc carries int64 (a compiled harness reads the
# program's dtype)
np.save("embed.in.ids.npy", ids.numpy().astype(np.int32))
np.save("embed.out.y.npy", y.numpy())

x = rs.randn(2, 9, 5).astype(np.float32)
gi = np.array([[0, -1, 4], [-9, 8, 3]], np.int64)          # Gather along axis 1
ei = rs.randint(-5, 5, size=(2, 9, 3)).astype(np.int64)    # GatherElements along axis 2
graph = helper.make_graph(
    [helper.make_node("Gather", ["x", "gi"], ["g"], axis=1),
     helper.make_node("GatherElements", ["x", "ei"], ["h"], axis=2)],
    "gathers",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
     helper.make_tensor_value_info("gi", TensorProto.INT64, list(gi.shape)),
     helper.make_tensor_value_info("ei", TensorProto.INT64, list(ei.shape))],
    [helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 2, 3, 5]),
     helper.make_tensor_value_info("h", TensorProto.FLOAT, list(ei.shape))])
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, "gathers.onnx")
for n, v in (("x", x), ("gi", gi.astype(np.int32)), ("ei", ei.astype(np.int32))):
    np.save("gathers.in.%s.npy" % n, v)
np.save("gathers.out.g.npy", np.take(x, gi, axis=1))
np.save("gathers.out.h.npy", np.take_along_axis(x, np.where(ei < 0, ei + 5, ei), axis=2))
