#!/usr/bin/python3
"""onnx_nodes.py — ONNX's backend node tests against texc --eval.

    onnx_nodes.py generate DIR
    onnx_nodes.py run TEXC NODEDIR WORKDIR [--jobs N] [--compile N CC]

Run with Debian's /usr/bin/python3 and python3-onnx (1.12); tests/onnx_nodes.sh
is the driver.  `generate` writes the ~920 node tests of the installed onnx
(DIR/node/test_NAME/model.onnx, test_data_set_0/{input,output}_N.pb), as
`backend-test-tools generate-data` does, after giving numpy 1.24 the aliases
onnx 1.12's generators still use (np.float, np.int, np.bool, np.object).

`run` takes each test in name order:
  - its inputs become .npy files (int64 and bool as they are: texc reads them
    into its i32 and bool inputs);
  - `TEXC model.onnx --eval --input NAME=FILE ... -o PREFIX`; texc's one error
    listing every op it does not convert ("the model uses ops texc does not
    convert", exit 1) marks the test unsupported;
  - an operand texc must know when compiling (a Reshape's shape, a Slice's
    starts: "its shape 's' depends on run-time data") that is a graph input is
    bound as a constant: the model is rewritten with that input turned into
    an initializer holding the test's value, and texc runs again;
  - each output PREFIX.OUT.npy (OUT the output's C-safe name) is compared
    with ONNX's expected one as onnx's backend runner compares them:
    floats by numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7), other
    types exactly, shapes equal.
It prints one line per test, `pass NAME`, `fail NAME: WHY` or
`unsupported NAME: OP ...`, then `summary: ...`.  With --compile N CC, N of
the passing tests (every k-th by name, so the same ones each run) are also
compiled (`TEXC model.onnx --harness -o X`, CC) and run on the same inputs,
and their outputs compared the same way: `compiled pass NAME` or
`compiled fail NAME: WHY`.
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# onnx 1.12 reads these aliases, which numpy 1.24 removed
for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if _alias not in np.__dict__:
        setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

RTOL, ATOL = 1e-3, 1e-7  # onnx/backend/test/runner/__init__.py
UNSUPPORTED = "the model uses ops texc does not convert"
RUNTIME_OPERAND = re.compile(r"its [a-z_ ]+ '([^']*)' depends on run-time data")


RESERVED = ("at", "const", "dim", "in", "input", "let", "output", "schedule")


def c_safe(name):
    """NAME as texc's importer names a graph output (onnx/import.c, te_safe)."""
    if name.endswith("_output_0") and len(name) > 9:
        name = name[:-9]
    out = re.sub(r"[^A-Za-z0-9]+", "_", name[:200]).strip("_")
    if not out or out[0].isdigit():
        out = "t" + out
    return out + "_" if out in RESERVED else out


def load_pb(path, value_info):
    """The array in PATH, a TensorProto (None for a sequence or an optional)."""
    if not value_info.type.HasField("tensor_type"):
        return None
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    arr = numpy_helper.to_array(t)
    if value_info.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 and \
            arr.dtype == np.uint16:
        # onnx 1.12 stores bfloat16 data as its bits; texc reads and
        # writes bf16 as the float32 values
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    return arr


def compare(want, path):
    """None if the array in PATH matches WANT, else why not."""
    if not os.path.exists(path):
        return "no output %s" % os.path.basename(path)
    got = np.load(path)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    try:
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=RTOL, atol=ATOL)
        else:
            np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))
    except AssertionError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        mism = [ln for ln in lines if ln.startswith("Mismatched") or ln.startswith("Max")]
        return "values differ (%s)" % "; ".join(mism[:2] or lines[:2])
    return None


def first_error(text):
    lines = [ln for ln in text.splitlines() if "error" in ln] or text.splitlines() or ["?"]
    return lines[0].strip()[:200]


class Case:
    """One node test: its model, inputs and expected outputs."""

    def __init__(self, nodedir, workdir, name):
        self.name = name
        self.dir = os.path.join(nodedir, name)
        self.work = os.path.join(workdir, name)
        self.model = onnx.load(os.path.join(self.dir, "model.onnx"))
        g = self.model.graph
        inits = {t.name for t in g.initializer}
        self.inputs = [vi for vi in g.input if vi.name not in inits]
        data = os.path.join(self.dir, "test_data_set_0")
        self.in_arrays = [load_pb(os.path.join(data, "input_%d.pb" % i), vi)
                          for i, vi in enumerate(self.inputs)]
        self.outputs = [vi.name for vi in g.output]
        self.out_arrays = [load_pb(os.path.join(data, "output_%d.pb" % i), vi)
                           for i, vi in enumerate(g.output)]
        self.bound = set()  # inputs turned into initializers
        self.model_path = os.path.join(self.dir, "model.onnx")

    def bind(self, name):
        """Rewrite the model with input NAME as an initializer holding its value."""
        self.bound.add(name)
        m = onnx.ModelProto()
        m.CopyFrom(self.model)
        keep = [vi for vi in m.graph.input if vi.name not in self.bound]
        del m.graph.input[:]
        m.graph.input.extend(keep)
        for vi, arr in zip(self.inputs, self.in_arrays):
            if vi.name in self.bound:
                m.graph.initializer.append(numpy_helper.from_array(arr, vi.name))
        self.model_path = os.path.join(self.work, "model.onnx")
        onnx.save(m, self.model_path)

    def input_args(self):
        args = []
        for i, (vi, arr) in enumerate(zip(self.inputs, self.in_arrays)):
            if vi.name in self.bound or arr is None:
                continue
            path = os.path.join(self.work, "in%d.npy" % i)
            np.save(path, arr)
            args += ["--input", "%s=%s" % (vi.name, path)]
        return args

    def check_outputs(self, prefix):
        for name, want in zip(self.outputs, self.out_arrays):
            if want is None:
                return "output %s is not a tensor" % name
            why = compare(want, "%s.%s.npy" % (prefix, c_safe(name)))
            if why:
                return "%s: %s" % (name, why)
        return None


def run_texc(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def evaluate(texc, nodedir, workdir, name):
    """(status, detail) of one test: 'pass', 'fail' or 'unsupported'."""
    try:
        case = Case(nodedir, workdir, name)
    except Exception as e:  # a data set onnx cannot read back
        return "fail", "reading the test: %s" % e
    os.makedirs(case.work, exist_ok=True)
    prefix = os.path.join(case.work, "out")
    for _ in range(len(case.inputs) + 1):
        try:
            rc, text = run_texc([texc, case.model_path, "--eval"] + case.input_args() +
                                ["-o", prefix])
        except subprocess.TimeoutExpired:
            return "fail", "texc --eval timed out"
        if rc == 0:
            why = case.check_outputs(prefix)
            return ("fail", why) if why else ("pass", "")
        if UNSUPPORTED in text:
            if rc != 1:
                return "fail", "unsupported ops, but exit %d" % rc
            ops = sorted({ln.rsplit(": ", 1)[1] for ln in text.splitlines()
                          if ln.startswith("  node '")})
            return "unsupported", " ".join(ops)
        m = RUNTIME_OPERAND.search(text)
        if m and m.group(1) not in case.bound and \
                any(vi.name == m.group(1) for vi in case.inputs):
            case.bind(m.group(1))
            continue
        if rc not in (0, 1):
            return "fail", "texc exit %d: %s" % (rc, first_error(text))
        why = first_error(text).replace(case.model_path, "model.onnx")
        # the importer's own error on an op's type, attribute or output (not
        # an error in the program it wrote) is a refusal
        if re.match(r"model\.onnx: error: ", why):
            return "fail", "refused: " + why[len("model.onnx: error: "):]
        return "fail", why
    return "fail", "binding inputs did not converge"


def compile_run(texc, cc, nodedir, workdir, name):
    """None if NAME compiled with --harness, run, matches; else why not."""
    case = Case(nodedir, workdir, name)
    work = os.path.join(workdir, name, "c")
    os.makedirs(work, exist_ok=True)
    # the operands --eval needed bound, bound the same way
    prefix = os.path.join(case.work, "out")
    while True:
        rc, text = run_texc([texc, case.model_path, "--eval"] + case.input_args() +
                            ["-o", prefix])
        m = RUNTIME_OPERAND.search(text)
        if rc == 0 or not m or m.group(1) in case.bound:
            break
        case.bind(m.group(1))
    k = os.path.join(work, "k")
    for extra in (["--emit-te"], ["--harness"]):
        rc, text = run_texc([texc, case.model_path] + extra + ["-o", k])
        if rc != 0:
            return "texc %s: %s" % (extra[0], first_error(text))
    with open(k + ".te") as f:
        te = f.read()
    # the harness's arguments: real inputs (as the graph orders them), then
    # the weights' file
    real = re.findall(r"^input ([A-Za-z0-9_]+) : (?!const)", te, re.M)
    # the harness reads the program's dtypes: the integers the importer
    # carries as i32 (int64, int16, uint16, uint32, uint64) as i32
    as_i32 = (np.int64, np.int16, np.uint16, np.uint32, np.uint64)
    by_name = {}
    for i, (vi, arr) in enumerate(zip(case.inputs, case.in_arrays)):
        if vi.name not in case.bound:
            path = os.path.join(work, "in%d.npy" % i)
            np.save(path, arr.astype(np.int32) if arr.dtype in as_i32 else arr)
            by_name[c_safe(vi.name)] = path
    args = [by_name[n] for n in real] + [k + ".weights"]
    outs = ["%s.got.%s.npy" % (k, c_safe(n)) for n in case.outputs]
    p = subprocess.run([cc, "-std=gnu11", "-O1", "-fopenmp", "-I" + work, k + ".c",
                        k + "_harness.c", "-lm", "-o", k + ".run"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        return "cc: %s" % first_error(p.stdout.decode("utf-8", "replace"))
    rc, text = run_texc([k + ".run"] + args + outs)
    if rc != 0:
        return "run exit %d: %s" % (rc, first_error(text))
    return case.check_outputs(k + ".got")


def cmd_run(argv):
    texc, nodedir, workdir = argv[:3]
    jobs, ncompile, cc = 2, 0, "cc"
    rest = argv[3:]
    while rest:
        if rest[0] == "--jobs":
            jobs, rest = int(rest[1]), rest[2:]
        elif rest[0] == "--compile":
            ncompile, cc, rest = int(rest[1]), rest[2], rest[3:]
        else:
            sys.exit("onnx_nodes.py: unknown option %s" % rest[0])
    names = sorted(d for d in os.listdir(nodedir) if d.startswith("test_"))
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda n: evaluate(texc, nodedir, workdir, n), names))
    count = {"pass": 0, "fail": 0, "unsupported": 0}
    passed = []
    refused = 0
    for name, (status, detail) in zip(names, results):
        count[status] += 1
        refused += status == "fail" and detail.startswith("refused: ")
        if status == "pass":
            passed.append(name)
            print("pass %s" % name)
        else:
            print("%s %s: %s" % (status, name, detail))
    supported = count["pass"] + count["fail"]
    print("summary: %d tests, %d supported, %d passed, %d failed (%d refused by texc's "
          "error on a type, attribute or output; %d wrong), %d unsupported" %
          (len(names), supported, count["pass"], count["fail"], refused,
           count["fail"] - refused, count["unsupported"]))
    if ncompile and passed:
        step = max(1, len(passed) // ncompile)
        sample = passed[::step][:ncompile]
        with ThreadPoolExecutor(jobs) as pool:
            whys = list(pool.map(lambda n: compile_run(texc, cc, nodedir, workdir, n),
                                 sample))
        for name, why in zip(sample, whys):
            print("compiled pass %s" % name if not why else
                  "compiled fail %s: %s" % (name, why))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "generate":
        from onnx.backend.test.cmd_tools import main as tools_main
        sys.argv = ["backend-test-tools", "generate-data", "-o", sys.argv[2]]
        tools_main()
    elif len(sys.argv) >= 5 and sys.argv[1] == "run":
        cmd_run(sys.argv[2:])
    else:
        sys.exit(__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
