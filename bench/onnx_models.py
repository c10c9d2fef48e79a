#!/usr/bin/env python3
"""onnx_models.py — make bench-onnx's models, its PyTorch peer and its report.

    onnx_models.py export --dir DIR --models 'mlp resnet18 bert gpt2' --opsets '14 17' [--small]
    onnx_models.py torch  --dir DIR --models ... --threads '1 2' --min-time T [--small]
    onnx_models.py report --dir DIR --models ... --opsets ... --threads ... --out FILE [--small]

bench/bench_onnx.sh runs the three steps around texc's builds and runs.

The models (MODELS below), random weights from a fixed seed per model,
in eval mode, batch 1 but for the MLP:
  mlp       784 -> 2048 ReLU -> 2048 GELU -> 1000, a batch of 64 rows
  resnet18  torchvision's ResNet-18 (weights=None: nothing is downloaded),
            its batch norms' statistics and affines drawn too (a trained
            network's are not the identity the initialisation gives),
            on one 3 x 224 x 224 image
  bert      a BERT-base encoder layer: nn.TransformerEncoderLayer, 768
            wide, 12 heads, GELU MLP 3072, post-norm (eps 1e-12), S = 128
  gpt2      a GPT-2-small block as GPT-2 writes it: pre-norm, one 768 x
            2304 projection split into q, k, v, 12 heads, its causal mask
            applied with torch.where(mask, scores, finfo.min), GELU (tanh
            form) MLP 3072, S = 128
--small gives each a few-second shape for smoke runs (not for results).

export writes, for each model NAME: DIR/NAME_opN.onnx (torch.onnx.export
at each opset N), DIR/NAME.in.f32 (its input, f32, C order) and
DIR/NAME.ref.f32 (PyTorch eager's f32 output on it, the reference texc's
output is checked against).

torch times PyTorch eager (inference mode) on every model at each thread
count, in a fresh process per configuration, because OpenMP reads
OMP_WAIT_POLICY and OpenBLAS its variables when they load (the same
configurations as bench/torch_block.py's, whose timing it imports):
OMP_WAIT_POLICY PASSIVE and ACTIVE, PyTorch's OpenBLAS (the pthread build)
and OpenBLAS's OpenMP build where installed, every one with
OPENBLAS_CORETYPE=SkylakeX (OpenBLAS 0.3.21 takes Zen 5 for Haswell),
OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = the threads, torch.set_num_threads,
denormals flushed.  Each worker rebuilds the models from their seeds and
checks its output against DIR/NAME.ref.f32 (a different model would fail
here, not pass as a slow one).  One line per model and configuration:
    row NAME THREADS CONFIG MEDIAN P25 P75 BEST REPS CPU_SECS CPU_SHARE MAXDIFF
into DIR/torch_rows.txt; the report keeps the fastest configuration.

A model export cannot build is left out of DIR/models.txt (the models
the later steps take) and said in DIR/skipped.txt: ResNet-18 without
torchvision.

report reads DIR/texc_rows.txt (bench_onnx.sh's) and DIR/torch_rows.txt,
compares each texc output DIR/NAME_opN_tT.out.f32 with DIR/NAME.ref.f32
(max absolute difference; above 1e-4, or a NaN, is a MISMATCH) and writes
the Markdown table.  It exits 1 when a row failed or mismatched, after
writing the table, which says so.
"""
import argparse
import math
import os
import platform
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_block import blas_builds, measure  # noqa: E402  (the same timing rules)

TOLERANCE = 1e-4
CONTENDED = 0.9   # bench.h's BENCH_CONTENDED: below this CPU share a run did not have its cores
SEED = 1919


def build_mlp(torch, small):
    nn = torch.nn
    d_in, d_h, d_out, batch = (784, 2048, 1000, 64) if not small else (64, 96, 10, 8)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d_in, d_h)
            self.fc2 = nn.Linear(d_h, d_h)
            self.fc3 = nn.Linear(d_h, d_out)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            h = nn.functional.gelu(self.fc2(h))
            return self.fc3(h)

    return MLP(), (batch, d_in)


def build_resnet18(torch, small):
    import torchvision
    model = torchvision.models.resnet18(weights=None, num_classes=1000 if not small else 10)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
    return model, (1, 3, 224, 224) if not small else (1, 3, 32, 32)


def build_bert(torch, small):
    d, h, f, s = (768, 12, 3072, 128) if not small else (64, 4, 128, 16)
    layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=h, dim_feedforward=f, dropout=0.0,
                                             activation='gelu', layer_norm_eps=1e-12,
                                             batch_first=True, norm_first=False)
    return layer, (1, s, d)


def build_gpt2(torch, small):
    nn = torch.nn
    d, h, f, s = (768, 12, 3072, 128) if not small else (64, 4, 128, 16)
    dh = d // h

    class Block(nn.Module):
        """GPT-2's block (Hugging Face's GPT2Block, Conv1D as nn.Linear)."""

        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d, eps=1e-5)
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d, eps=1e-5)
            self.c_fc = nn.Linear(d, f)
            self.mlp_proj = nn.Linear(f, d)
            self.register_buffer('causal', torch.tril(torch.ones(s, s, dtype=torch.bool)).view(1, 1, s, s))

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
            q = q.view(b, t, h, dh).transpose(1, 2)
            k = k.view(b, t, h, dh).transpose(1, 2)
            v = v.view(b, t, h, dh).transpose(1, 2)
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
            w = torch.where(self.causal[:, :, :t, :t], w,
                            torch.full((), torch.finfo(w.dtype).min, dtype=w.dtype))
            a = torch.matmul(torch.softmax(w, dim=-1), v)
            x = x + self.c_proj(a.transpose(1, 2).reshape(b, t, d))
            m = nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate='tanh')
            return x + self.mlp_proj(m)

    return Block(), (1, s, d)


# name -> (builder, what the table calls it)
MODELS = {
    'mlp': (build_mlp, 'MLP 784-2048-2048-1000 (ReLU, GELU), batch 64'),
    'resnet18': (build_resnet18, "torchvision's ResNet-18, 1 x 3 x 224 x 224"),
    'bert': (build_bert, 'BERT-base encoder layer (768, 12 heads, MLP 3072, post-norm), S = 128'),
    'gpt2': (build_gpt2, 'GPT-2-small block (pre-norm, causal mask, tanh GELU MLP 3072), S = 128'),
}


def build(torch, name, small):
    """Model NAME, its weights drawn from its seed, and its input."""
    index = list(MODELS).index(name)
    torch.manual_seed(SEED + index)
    model, shape = MODELS[name][0](torch, small)
    model.eval()
    x = torch.randn(*shape)
    return model, x


def export(args):
    import numpy
    import torch
    torch.set_flush_denormal(True)
    skipped = []
    if 'resnet18' in args.models:
        try:
            import torchvision  # noqa: F401
        except ImportError:
            skipped.append('`resnet18` skipped: this Python has no torchvision '
                           '(Debian: python3-torchvision)')
            print('onnx_models.py: ' + skipped[-1].replace('`', ''), file=sys.stderr, flush=True)
            args.models.remove('resnet18')
    # the models exported, which the later steps take; and what was not
    with open(os.path.join(args.dir, 'models.txt'), 'w') as f:
        f.write(' '.join(args.models) + '\n')
    with open(os.path.join(args.dir, 'skipped.txt'), 'w') as f:
        f.write(''.join(line + '\n' for line in skipped))
    for name in args.models:
        model, x = build(torch, name, args.small)
        with torch.inference_mode():
            y = model(x)
        x.numpy().astype(numpy.float32).tofile(os.path.join(args.dir, f'{name}.in.f32'))
        y.numpy().astype(numpy.float32).tofile(os.path.join(args.dir, f'{name}.ref.f32'))
        for opset in args.opsets:
            path = os.path.join(args.dir, f'{name}_op{opset}.onnx')
            # outside no_grad, as tests/onnx/gen_models.py exports: PyTorch's
            # fused encoder-layer path (no ONNX form) is for inference only
            torch.onnx.export(model, (x,), path, opset_version=opset,
                              input_names=['x'], output_names=['y'])
            print(f'onnx_models.py: {path}: {os.path.getsize(path) / 1e6:.1f} MB, input {list(x.shape)}, '
                  f'output {list(y.shape)}', file=sys.stderr, flush=True)


def worker(args):
    """One configuration's process: every model, timed on ARGS.threads."""
    import numpy
    import torch
    torch.set_flush_denormal(True)
    torch.set_num_threads(args.threads)
    if torch.get_num_threads() != args.threads:
        sys.exit(f'onnx_models.py: torch.set_num_threads({args.threads}) left {torch.get_num_threads()}')
    for name in args.models:
        model, x = build(torch, name, args.small)
        ref = numpy.fromfile(os.path.join(args.dir, f'{name}.ref.f32'), dtype=numpy.float32)
        with torch.inference_mode():
            y = model(x).numpy().ravel()
            if y.size != ref.size:
                sys.exit(f'onnx_models.py: {name}: {y.size} outputs, the reference has {ref.size}')
            diff = float(numpy.max(numpy.abs(y.astype(numpy.float64) - ref)))
            # another thread count sums in another order: a loose bound
            if not diff <= 1e-3 * max(1.0, float(numpy.max(numpy.abs(ref)))):
                sys.exit(f'onnx_models.py: {name}: this process\'s model is not the exported one '
                         f'(max |y - ref| = {diff:.3g})')
            res = measure(lambda: model(x), args.threads, args.min_time)
        print('row', name, args.threads, args.config, *('%.9g' % v for v in res), '%.3g' % diff,
              flush=True)


def configurations():
    blas, _ = blas_builds()
    return [(f'{b}-{p.lower()}', p, libdir) for b, libdir in blas for p in ('PASSIVE', 'ACTIVE')]


def torch_peer(args):
    """A worker per thread count and configuration, into DIR/torch_rows.txt."""
    import torch
    lines = [f'about PyTorch {torch.__version__} '
             f'({torch.__config__.parallel_info().splitlines()[-1].strip()}, '
             f'{"oneDNN available" if torch.backends.mkldnn.is_available() else "no oneDNN"})']
    for threads in args.threads:
        for config, policy, libdir in configurations():
            env = dict(os.environ, OMP_WAIT_POLICY=policy, OMP_NUM_THREADS=str(threads),
                       OPENBLAS_NUM_THREADS=str(threads), OPENBLAS_CORETYPE='SkylakeX')
            if libdir:
                env['LD_LIBRARY_PATH'] = libdir + (':' + env['LD_LIBRARY_PATH']
                                                   if env.get('LD_LIBRARY_PATH') else '')
            print(f'onnx_models.py: PyTorch eager, {threads} thread(s), {config}', file=sys.stderr,
                  flush=True)
            cmd = [sys.executable, __file__, 'worker', '--dir', args.dir, '--models',
                   ' '.join(args.models), '--threads', str(threads), '--min-time', str(args.min_time),
                   '--config', config] + (['--small'] if args.small else [])
            done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
            lines += done.stdout.splitlines()
            if done.returncode != 0:
                lines.append(f'fail {threads} {config} exit status {done.returncode}')
    with open(os.path.join(args.dir, 'torch_rows.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def read_header_shapes(path):
    """The real input's and the output's shapes from NAME.h's comment."""
    shapes = {}
    with open(path) as f:
        for line in f:
            line = line.strip(' *\n')
            for kind in ('input', 'output'):
                if line.startswith(kind + ' ') and ': const ' not in line and ': f32[' in line:
                    dims = line.split('[', 1)[1].rstrip(']')
                    shapes.setdefault(kind, []).append([int(v) for v in dims.split(',')])
    return shapes


def report(args):
    import numpy
    texc = {}   # (name, opset, threads) -> fields, or ('fail', why)
    with open(os.path.join(args.dir, 'texc_rows.txt')) as f:
        for line in f:
            w = line.split(maxsplit=4)
            if w[0] == 'texc':
                texc[(w[1], int(w[2]), int(w[3]))] = ('ok', [float(v) for v in w[4].split()])
            elif w[0] == 'fail':
                texc[(w[1], int(w[2]), int(w[3]))] = ('fail', w[4].strip())
    about, torch_best, torch_fail = '', {}, []
    with open(os.path.join(args.dir, 'torch_rows.txt')) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == 'about':
                about = line[6:].strip()
            elif w[0] == 'fail':
                torch_fail.append(line.strip())
            elif w[0] == 'row':
                name, threads, config = w[1], int(w[2]), w[3]
                median = float(w[4])
                best = torch_best.get((name, threads))
                if best is None or median < best[0]:
                    torch_best[(name, threads)] = (median, config, float(w[10]), float(w[11]))

    def share(v):
        return '%.2f%s' % (v, ' ⚠' if v < CONTENDED else '')

    rows, failed, contended = [], 0, 0
    for name in args.models:
        ref = numpy.fromfile(os.path.join(args.dir, f'{name}.ref.f32'), dtype=numpy.float32)
        for opset in args.opsets:
            base = os.path.join(args.dir, f'{name}_op{opset}')
            for threads in args.threads:
                state, data = texc.get((name, opset, threads), ('fail', 'not run'))
                t = torch_best.get((name, threads))
                torch_ms = '%.4g' % (t[0] * 1e3) if t else 'failed'
                config = t[1] if t else 'no PyTorch row'
                torch_share = share(t[2]) if t else '-'
                contended += 1 if t and t[2] < CONTENDED else 0
                if state == 'fail':
                    failed += 1
                    rows.append((name, opset, threads, f'**{data}**', torch_ms, '-', '-',
                                 '**FAILED**', config, f'- / {torch_share}'))
                    continue
                out = numpy.fromfile(f'{base}_t{threads}.out.f32', dtype=numpy.float32)
                shapes = read_header_shapes(base + '.h')
                check = 'ok'
                if out.size != ref.size or len(shapes.get('output', [])) != 1:
                    check, err = f'**MISMATCH**: {out.size} outputs, PyTorch {ref.size}', '-'
                else:
                    diff = numpy.abs(out.astype(numpy.float64) - ref)
                    err_v = float(numpy.max(diff)) if not numpy.isnan(diff).any() else math.nan
                    err = '%.2e' % err_v if not math.isnan(err_v) else 'NaN'
                    if not err_v <= TOLERANCE:
                        check = '**MISMATCH**'
                if check != 'ok':
                    failed += 1
                median = data[0]
                ratio = '%.2f' % (t[0] / median) if t else '-'
                rows.append((name, opset, threads, '%.4g' % (median * 1e3), torch_ms, ratio, err,
                             check, config, f'{share(data[6])} / {torch_share}'))
                contended += 1 if data[6] < CONTENDED and not (t and t[2] < CONTENDED) else 0

    # the load when bench_onnx.sh's runs ended, else now
    after = os.path.join(args.dir, 'load_after.txt')
    load = open(after if os.path.exists(after) else '/proc/loadavg').read().split()[:3]
    with open(os.path.join(args.dir, 'load_before.txt')) as f:
        load_before = f.read().split()[:3]
    cpu = 'unknown CPU'
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    with open(os.path.join(args.dir, 'texc_about.txt')) as f:
        texc_about = f.read().strip()
    out = []
    out.append('## Imported ONNX models: texc against PyTorch eager (make bench-onnx)\n')
    if args.small:
        out.append('**Smoke run: the models at `--small` shapes, not those named below; '
                   'these numbers are not results.**\n')
    out.append(f'{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}; '
               f'{texc_about}; {about}.  Load average (1, 5, 15 min) at the start: {" ".join(load_before)}, at the end: '
               f'{" ".join(load)}.\n')
    out.append('Each model is exported from PyTorch (`bench/onnx_models.py`: random weights from a '
               'fixed seed, eval mode) at each opset, compiled by `texc MODEL.onnx` (default '
               'schedule, no tuning log) and built with the flags above; `bench/bench_onnx.c` '
               'loads `NAME.weights` once (`NAME_load_weights`, which packs them), then times '
               '`NAME_run` alone on one process per thread count (OMP_NUM_THREADS): >= 0.05 s of '
               f'warm-up, then calls until >= {args.min_time:g} s and >= 10 calls, the median.  '
               'PyTorch eager is timed the same way (`torch.inference_mode()`) in a process per '
               'configuration; the fastest is kept and named.  Both flush denormals.  Ratio = '
               'PyTorch ms / texc ms (> 1: texc faster).  Max abs err: texc against PyTorch\'s '
               f'f32 output on the same input; above {TOLERANCE:g} (or a NaN) is a MISMATCH.  '
               'PyTorch does not depend on the opset: both opsets\' rows show its same time.  '
               'CPU share: the process\'s CPU time over the timed calls / (their wall time x '
               f'threads), texc / PyTorch; ⚠ below {CONTENDED:g}: the run did not have its cores '
               '(another process had them), and its times are not a fair measurement.\n')
    out.append('| model | opset | threads | texc ms | PyTorch ms | ratio | max abs err | check | '
               'PyTorch configuration (the fastest tried) | CPU share |')
    out.append('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |')
    for r in rows:
        out.append('| ' + ' | '.join(str(v).replace('|', '\\|') for v in r) + ' |')
    out.append('')
    missing = blas_builds()[1]
    out.append('Models: ' + '; '.join(f'`{n}`: {MODELS[n][1]}' for n in args.models) + '.  '
               'PyTorch configurations tried: ' + ', '.join(c for c, _, _ in configurations()) +
               ', each with OPENBLAS_CORETYPE=SkylakeX and torch.set_num_threads(threads)' +
               (f'; {missing}' if missing else '') + '.\n')
    with open(os.path.join(args.dir, 'skipped.txt')) as f:
        skipped = f.read().split('\n')
    out += [line + '.\n' for line in skipped if line]
    if torch_fail:
        out.append('PyTorch runs that failed: ' + '; '.join(torch_fail) + '.\n')
    if failed:
        out.append(f'**{failed} row(s) failed or mismatched (see the check column).**\n')
    if contended:
        out.append(f'**⚠ {contended} row(s) ran below {CONTENDED:g} of their threads\' CPU time '
                   '(texc\'s, PyTorch\'s or both): another process was using the cores, so their '
                   'times and ratios do not measure texc or PyTorch; run again on a quiet '
                   'machine.**\n')
    text = '\n'.join(out)
    sys.stdout.write(text)
    with open(args.out, 'w') as f:
        f.write(text)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('step', choices=('export', 'torch', 'worker', 'report'))
    ap.add_argument('--dir', required=True)
    ap.add_argument('--models', default=' '.join(MODELS))
    ap.add_argument('--opsets', default='14 17')
    ap.add_argument('--threads', default='1 2')
    ap.add_argument('--min-time', type=float, default=0.3)
    ap.add_argument('--small', action='store_true')
    ap.add_argument('--out')
    ap.add_argument('--config', default='', help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.models = args.models.split()
    for name in args.models:
        if name not in MODELS:
            sys.exit(f'onnx_models.py: no model {name!r} (the models: {" ".join(MODELS)})')
    args.opsets = [int(v) for v in args.opsets.split()]
    if args.step == 'worker':
        args.threads = int(args.threads)
        worker(args)
        return 0
    args.threads = [int(v) for v in args.threads.split()]
    if args.step == 'export':
        export(args)
    elif args.step == 'torch':
        torch_peer(args)
    else:
        if not args.out:
            sys.exit('onnx_models.py report: --out FILE is needed')
        return report(args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
