/* pool_app.c — the generated C's parallel loops (te_parallel_for, from
 * codegen/parallel.c) under the ways a program can call them.  tests/pool.sh
 * builds it with a matmul_gelu kernel named pk at sizes no tile divides.
 *
 *   pool_app check     every thread count from 1 to 7 gives bit for bit the
 *                      one-thread output (each element is computed by the
 *                      same code whatever the split), which is within 1e-5
 *                      of a naive double reference; 200 calls in a row;
 *                      calls 50 ms apart (the pool's threads asleep); two
 *                      program threads calling at once (one of them gets
 *                      the pool, the other OpenMP); calls from inside an
 *                      OpenMP parallel region; a child of fork() after the
 *                      pool has started.
 *   pool_app steady N  N calls on 2 threads, nothing else (pool.sh counts
 *                      the system calls they make).
 *   pool_app dl LIB    opens LIB (the same kernel, named pkdl, as a shared
 *                      library), calls it on 2 threads, closes it and keeps
 *                      running: the pool's threads must be gone with it.
 * Exit 0 when all is well; messages on stderr otherwise.
 */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pk.h"

enum { M = PK_M, K = PK_K, N = PK_N };
typedef void Kernel(const float *x, const float *w, const float *b, float *z);

static float x[M * K], w[K * N], b[N], ref[M * N];

static void fill(float *v, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static int differs(const float *z, const float *want, const char *what)
{
    if (memcmp(z, want, sizeof(float) * M * N) == 0)
        return 0;
    for (int i = 0; i < M * N; i++)
        if (memcmp(&z[i], &want[i], sizeof z[i]) != 0) {
            fprintf(stderr, "%s: z[%d][%d] = %.9g, want %.9g\n", what, i / N, i % N, z[i], want[i]);
            break;
        }
    return 1;
}

/* ---- check ---------------------------------------------------------------- */

typedef struct Caller {
    Kernel *kernel;
    int calls, bad;
    float z[M * N];
} Caller;

static void *call_repeatedly(void *arg)
{
    Caller *c = arg;
    for (int r = 0; r < c->calls; r++) {
        memset(c->z, 0xff, sizeof c->z);
        c->kernel(x, w, b, c->z);
        c->bad += differs(c->z, ref, "a program thread's call");
    }
    return NULL;
}

static int check(Kernel *kernel)
{
    static float z[M * N];
    int bad = 0;
    /* naive, in double */
    static float naive[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)x[i * K + k] * w[k * N + j];
            double y = s * 0.125 + b[j];
            naive[i * N + j] = (float)(0.5 * y * (1.0 + erf(y / sqrt(2.0))));
        }
    omp_set_num_threads(1);
    kernel(x, w, b, ref);
    for (int i = 0; i < M * N; i++)
        if (!(fabsf(ref[i] - naive[i]) <= 1e-5f * (1.0f + fabsf(naive[i])))) {
            fprintf(stderr, "1 thread: z[%d][%d] = %.9g, naive %.9g\n", i / N, i % N, ref[i], naive[i]);
            return 1;
        }
    for (int t = 2; t <= 7; t++) {
        omp_set_num_threads(t);
        memset(z, 0xff, sizeof z);
        kernel(x, w, b, z);
        char what[32];
        snprintf(what, sizeof what, "%d threads", t);
        bad += differs(z, ref, what);
    }
    omp_set_num_threads(2);
    for (int r = 0; r < 200; r++) {
        memset(z, 0xff, sizeof z);
        kernel(x, w, b, z);
        bad += differs(z, ref, "200 calls in a row");
    }
    /* 50 ms apart: the pool's threads have gone to sleep, a call wakes them */
    for (int r = 0; r < 3; r++) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        memset(z, 0xff, sizeof z);
        kernel(x, w, b, z);
        bad += differs(z, ref, "a call after 50 ms");
    }
    /* two program threads at once */
    static Caller c[2];
    pthread_t tid[2];
    for (int i = 0; i < 2; i++) {
        c[i] = (Caller){ kernel, 100, 0, {0} };
        if (pthread_create(&tid[i], NULL, call_repeatedly, &c[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(tid[i], NULL);
        bad += c[i].bad;
    }
    /* inside a parallel region: each OpenMP thread calls on its own output */
    static float zt[4][M * N];
    int region_bad = 0;
    #pragma omp parallel num_threads(4) reduction(+ : region_bad)
    {
        float *mine = zt[omp_get_thread_num()];
        for (int r = 0; r < 5; r++) {
            memset(mine, 0xff, sizeof zt[0]);
            kernel(x, w, b, mine);
            region_bad += differs(mine, ref, "inside a parallel region");
        }
    }
    bad += region_bad;
    /* a child of fork(), the pool started in the parent; not with
     * TEXC_POOL=0: libgomp's child of fork() after threaded regions in
     * several program threads hangs (OpenMP leaves fork undefined) */
    const char *env = getenv("TEXC_POOL");
    if (env && env[0] == '0') {
        printf("pool_app: TEXC_POOL=0: not calling in a child of fork()\n");
        return bad != 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        memset(z, 0xff, sizeof z);
        kernel(x, w, b, z);
        _exit(differs(z, ref, "in a child of fork()"));
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child of fork() failed (status %d)\n", status);
        bad++;
    }
    if (bad)
        fprintf(stderr, "%d calls gave a wrong output\n", bad);
    else
        printf("pool_app: %dx%dx%d, 1-7 threads, in a row, concurrent, in a region, after fork: all equal\n",
               M, K, N);
    return bad != 0;
}

int main(int argc, char **argv)
{
    fill(x, M * K, 1);
    fill(w, K * N, 2);
    fill(b, N, 3);
    if (argc == 2 && strcmp(argv[1], "check") == 0)
        return check(pk);
    if (argc == 3 && strcmp(argv[1], "steady") == 0) {
        static float z[M * N];
        omp_set_num_threads(2);
        for (int r = atoi(argv[2]); r > 0; r--)
            pk(x, w, b, z);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "dl") == 0) {
        void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        Kernel *k = lib ? (Kernel *)dlsym(lib, "pkdl") : NULL;
        if (!k) {
            fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
            return 1;
        }
        static float z[M * N];
        omp_set_num_threads(2);
        for (int r = 0; r < 20; r++)
            k(x, w, b, z);
        if (dlclose(lib) != 0) {
            fprintf(stderr, "dlclose: %s\n", dlerror());
            return 1;
        }
        /* a pool thread left running would now execute unmapped code */
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        printf("pool_app: the kernel's library opened, called on 2 threads, closed\n");
        return 0;
    }
    fprintf(stderr, "usage: pool_app check | steady N | dl LIB\n");
    return 2;
}
