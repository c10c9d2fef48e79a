/* host.c — the CPU the kernels will run on, as /proc/cpuinfo describes it.
 *
 * Read once, on the first question, and kept: the tuner asks how wide
 * its vectors are (tuner/space.c sizes its register tiles by them) and
 * the tuning log records its model and SIMD extensions (tuner/log.c), and
 * the two must describe the same machine.  The first processor's lines
 * stand for all of them.  Without /proc/cpuinfo there is no model and no
 * flag: 16-byte vectors, which every target texc builds for has.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

typedef struct HostCpu {
    char model[256]; /* "model name" (x86), "Model" or "cpu model" */
    char *flags;     /* the "flags" (x86) or "Features" (ARM) line's value */
} HostCpu;

static const HostCpu *host_cpu(void)
{
    static HostCpu cpu;
    static bool read;
    if (read)
        return &cpu;
    read = true;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *value = colon + 1;
        value += strspn(value, " \t");
        value[strcspn(value, "\n")] = '\0';
        if (!cpu.model[0] && (strncmp(line, "model name", 10) == 0 ||
                              strncmp(line, "Model", 5) == 0 || strncmp(line, "cpu model", 9) == 0))
            snprintf(cpu.model, sizeof cpu.model, "%s", value);
        if (!cpu.flags && (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0))
            cpu.flags = strdup(value);
    }
    free(line);
    if (f)
        fclose(f);
    return &cpu;
}

const char *sch_host_cpu_model(void)
{
    return host_cpu()->model;
}

bool sch_host_cpu_has(const char *flag)
{
    const char *flags = host_cpu()->flags;
    size_t n = strlen(flag);
    /* a whole word of the space-separated list */
    for (const char *p = flags; p && (p = strstr(p, flag)); p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

void sch_host_vector_unit(int *bytes, int *regs)
{
    if (sch_host_cpu_has("avx512f")) {
        *bytes = 64;
        *regs = 32;
    } else if (sch_host_cpu_has("avx")) {
        *bytes = 32;
        *regs = 16;
    } else {
        *bytes = 16;
        *regs = sch_host_cpu_has("asimd") ? 32 : 16;
    }
}

int sch_host_lanes(DType t)
{
    int bytes, regs;
    sch_host_vector_unit(&bytes, &regs);
    int lanes = bytes / dtype_bytes(t);
    return lanes > 16 ? 16 : lanes < 1 ? 1 : lanes;
}
