#!/usr/bin/env python3
"""torch_block.py — make bench's PyTorch peer: the BERT-base layer.

    torch_block.py --dir DIR --sizes '128 512' --threads '1 2' --min-time T

The layer is samples/transformer_block.te at D = 768, H = 12, F = 3072,
written as the same computation in PyTorch (block below): pre-norm, layer
norms with the biased variance and eps = 1e-5 inside the square root,
softmax(q k^T / sqrt(DH)) v with the row maximum subtracted (torch.softmax
does), GELU with erf, biases on the output projection and the MLP only.
The weights are held as nn.Linear holds them (out x in, F.linear), so
that eager calls addmm on OpenBLAS and TorchScript's
optimize_for_inference can hand the linears to oneDNN: PyTorch's own best
layout, not texc's.

bench_block.c writes the inputs (DIR/in_S.f32: the layer's 15 arrays in
texc's argument order, f32, native byte order) and runs this script, which:
  - computes the float64 reference of each S (the same module in double)
    into DIR/ref64_S.f32 (rounded to f32 only when written);
  - times PyTorch eager and TorchScript (torch.jit.trace, freeze,
    optimize_for_inference) at each S and thread count, in a fresh process
    per configuration, because OpenMP reads OMP_WAIT_POLICY and OpenBLAS
    its variables when they load: OMP_WAIT_POLICY PASSIVE and ACTIVE,
    PyTorch's OpenBLAS (the pthread build libblas.so.3 points to) and
    OpenBLAS's OpenMP build (by LD_LIBRARY_PATH, where installed), every
    one with OPENBLAS_CORETYPE=SkylakeX (OpenBLAS 0.3.21 takes this CPU for
    Haswell), OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = the row's threads
    and torch.set_num_threads; bench_block keeps the fastest of each;
  - flushes denormals (torch.set_flush_denormal: FTZ and DAZ) before any
    thread is started, as bench_block does for texc.
Timing is bench_measure's (measure.c): >= 0.05 s of warm-up, then
separately timed calls until >= MIN_TIME s and >= 10 calls (3 for calls
over 1 s), median and quartiles interpolated the same way, the process's
CPU time over the timed calls.  Each run's output goes to
DIR/torch_MODE_S_tTHREADS_CONFIG.f32; stdout has one line per run:
    row S MODE THREADS CONFIG MEDIAN P25 P75 BEST REPS CPU_SECS CPU_SHARE FILE
and one `about TEXT` line.  A failure exits non-zero with a message.
"""
import argparse
import os
import subprocess
import sys
import time

D, H, F = 768, 12, 3072
DH = D // H
EPS = 1e-5
# texc's argument order (samples/transformer_block.te's inputs) and shapes
ARGS = [('x', ('S', D)), ('ln1_g', (D,)), ('ln1_b', (D,)), ('wq', (D, D)), ('wk', (D, D)),
        ('wv', (D, D)), ('wo', (D, D)), ('bo', (D,)), ('ln2_g', (D,)), ('ln2_b', (D,)),
        ('w1', (D, F)), ('b1', (F,)), ('w2', (F, D)), ('b2', (D,))]
OPENMP_BLAS = '/usr/lib/x86_64-linux-gnu/openblas-openmp'


def blas_builds():
    """The OpenBLAS builds PyTorch is tried with, (name, LD_LIBRARY_PATH dir
    or None), and a note where OpenBLAS's OpenMP build is missing (its
    configurations are then not tried, and the report says so)."""
    if os.path.exists(os.path.join(OPENMP_BLAS, 'libblas.so.3')):
        return [('pthread-blas', None), ('openmp-blas', OPENMP_BLAS)], ''
    return [('pthread-blas', None)], ("OpenBLAS's OpenMP build is not installed (Debian: "
                                      "libopenblas0-openmp): PyTorch's configurations with it "
                                      "were not tried")


def load_inputs(torch, path, s):
    """The arrays of DIR/in_S.f32 as f32 tensors, by name."""
    import numpy
    flat = numpy.fromfile(path, dtype=numpy.float32)
    out, at = {}, 0
    for name, shape in ARGS:
        shape = tuple(s if d == 'S' else d for d in shape)
        count = 1
        for d in shape:
            count *= d
        out[name] = torch.from_numpy(flat[at:at + count].reshape(shape).copy())
        at += count
    if at != flat.size:
        sys.exit(f'torch_block.py: {path}: {flat.size} floats, the layer at S = {s} has {at}')
    return out


def make_block(torch, a, dtype):
    """The layer as a module of A's weights, in DTYPE."""
    F_ = torch.nn.functional

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            p = {k: v.to(dtype) for k, v in a.items() if k != 'x'}
            for name in ('ln1_g', 'ln1_b', 'bo', 'ln2_g', 'ln2_b', 'b1', 'b2'):
                self.register_buffer(name, p[name])
            # x @ w is F.linear(x, w^T): nn.Linear's layout, out x in
            for name in ('wq', 'wk', 'wv', 'wo', 'w1', 'w2'):
                self.register_buffer(name + 't', p[name].t().contiguous())

        def forward(self, x):
            s = x.shape[0]
            xn = F_.layer_norm(x, (D,), self.ln1_g, self.ln1_b, EPS)
            q = F_.linear(xn, self.wqt).view(s, H, DH).transpose(0, 1)
            k = F_.linear(xn, self.wkt).view(s, H, DH).transpose(0, 1)
            v = F_.linear(xn, self.wvt).view(s, H, DH).transpose(0, 1)
            score = torch.matmul(q, k.transpose(1, 2)) * (1.0 / DH ** 0.5)
            ctx = torch.matmul(torch.softmax(score, dim=-1), v)
            r = x + F_.linear(ctx.transpose(0, 1).reshape(s, D), self.wot, self.bo)
            rn = F_.layer_norm(r, (D,), self.ln2_g, self.ln2_b, EPS)
            act = F_.gelu(F_.linear(rn, self.w1t, self.b1))
            return r + F_.linear(act, self.w2t, self.b2)

    return Block().eval()


def measure(run, threads, min_time):
    """bench_measure (measure.c), in Python: (median, p25, p75, best, reps, cpu, share)."""
    start = time.perf_counter()
    while True:
        run()
        if time.perf_counter() - start >= 0.05:
            break
    samples, total = [], 0.0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    while True:
        t0 = time.perf_counter()
        run()
        secs = time.perf_counter() - t0
        samples.append(secs)
        total += secs
        if total >= min_time and len(samples) >= (3 if samples[0] > 1.0 else 10):
            break
    cpu = time.process_time() - cpu0
    share = cpu / ((time.perf_counter() - wall0) * threads)
    samples.sort()

    def pct(q):
        pos = q * (len(samples) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(samples) - 1)
        return samples[lo] + (pos - lo) * (samples[hi] - samples[lo])

    return pct(0.5), pct(0.25), pct(0.75), samples[0], len(samples), cpu, share


def worker(args):
    """One configuration's process: eager and TorchScript at every S, on ARGS.threads."""
    import torch
    torch.set_flush_denormal(True)
    torch.set_num_threads(args.threads)
    if torch.get_num_threads() != args.threads:
        sys.exit(f'torch_block.py: torch.set_num_threads({args.threads}) left {torch.get_num_threads()}')
    for s in args.sizes:
        a = load_inputs(torch, os.path.join(args.dir, f'in_{s}.f32'), s)
        x = a['x']
        with torch.no_grad():
            eager = make_block(torch, a, torch.float32)
            script = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(eager, (x,))))
            for mode, fn in (('eager', eager), ('torchscript', script)):
                res = measure(lambda: fn(x), args.threads, args.min_time)
                y = fn(x)
                path = os.path.join(args.dir, f'torch_{mode}_{s}_t{args.threads}_{args.config}.f32')
                y.contiguous().numpy().astype('float32').tofile(path)
                print('row', s, mode, args.threads, args.config, *('%.9g' % v for v in res), path,
                      flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dir', required=True)
    ap.add_argument('--sizes', required=True)
    ap.add_argument('--threads', required=True)
    ap.add_argument('--min-time', type=float, default=0.3)
    ap.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--config', default='', help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split()]
    if args.worker:
        args.threads = int(args.threads)
        worker(args)
        return

    import torch
    torch.set_flush_denormal(True)
    with torch.no_grad():
        for s in args.sizes:
            a = load_inputs(torch, os.path.join(args.dir, f'in_{s}.f32'), s)
            y = make_block(torch, a, torch.float64)(a['x'].double())
            y.numpy().astype('float32').tofile(os.path.join(args.dir, f'ref64_{s}.f32'))
    blas, missing = blas_builds()
    print(f'about PyTorch {torch.__version__} ({torch.__config__.parallel_info().splitlines()[-1].strip()}, '
          f'{torch.backends.mkldnn.is_available() and "oneDNN available" or "no oneDNN"}); '
          f'the configurations tried: ' +
          ', '.join(f'{b}-{p.lower()}' for b, _ in blas for p in ('PASSIVE', 'ACTIVE')) +
          (f' ({missing})' if missing else ''), flush=True)
    for threads in args.threads.split():
        for name, libdir in blas:
            for policy in ('PASSIVE', 'ACTIVE'):
                env = dict(os.environ, OMP_WAIT_POLICY=policy, OMP_NUM_THREADS=threads,
                           OPENBLAS_NUM_THREADS=threads, OPENBLAS_CORETYPE='SkylakeX')
                if libdir:
                    env['LD_LIBRARY_PATH'] = libdir + (':' + env['LD_LIBRARY_PATH']
                                                       if env.get('LD_LIBRARY_PATH') else '')
                config = f'{name}-{policy.lower()}'
                print(f'torch_block.py: {threads} thread(s), {config}', file=sys.stderr, flush=True)
                done = subprocess.run([sys.executable, __file__, '--worker', '--dir', args.dir,
                                       '--sizes', ' '.join(map(str, args.sizes)), '--threads', threads,
                                       '--min-time', str(args.min_time), '--config', config],
                                      env=env, stdout=subprocess.PIPE, text=True)
                sys.stdout.write(done.stdout)
                sys.stdout.flush()
                if done.returncode != 0:
                    sys.exit(f'torch_block.py: the {config} run on {threads} thread(s) failed')


if __name__ == '__main__':
    main()
