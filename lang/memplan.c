/* memplan.c — memory planning: one workspace for every intermediate.
 *
 * The code generator numbers its kernels 0, 1, ... in execution order;
 * each intermediate buffer is live from the kernel that writes it to the
 * last kernel that reads it, inclusive.  Two buffers whose ranges overlap
 * must not share a byte; two whose ranges are disjoint may.  Finding the
 * smallest workspace is NP-hard (it is dynamic storage allocation), so
 * te_memplan uses the heuristic production planners use (TFLite's greedy
 * by size, ONNX Runtime's and XLA's variants):
 *
 *   place buffers largest first (ties: earlier first use, then input
 *   order, so the plan is deterministic); each goes at the lowest 64-byte
 *   aligned offset where it overlaps no already-placed buffer whose live
 *   range overlaps its own (first fit over the gaps between them).
 *
 * Invariants of the result: every offset is a multiple of 64; for any two
 * buffers with overlapping live ranges, [offset, offset + aligned size)
 * are disjoint; the peak (the largest offset + aligned size) is at most
 * the naive sum of aligned sizes, since first fit never places a buffer
 * past the end of all the buffers placed before it.  Zero-byte buffers
 * occupy nothing and sit at offset 0.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "texc.h"

#define PLAN_ALIGN 64

typedef struct Order {
    int64_t size; /* aligned */
    int first, index;
} Order;

static int by_size_desc(const void *pa, const void *pb)
{
    const Order *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

typedef struct Placed {
    int64_t offset, size;
} Placed;

static int by_offset(const void *pa, const void *pb)
{
    const Placed *a = pa, *b = pb;
    return (a->offset > b->offset) - (a->offset < b->offset);
}

/* BYTES rounded up to PLAN_ALIGN, or -1 if that overflows. */
static int64_t align_up(int64_t bytes)
{
    if (bytes > INT64_MAX - (PLAN_ALIGN - 1))
        return -1;
    return (bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

/* Returns the planned peak, or -1 when some offset or the peak would not
 * fit in int64 (the offsets are then unspecified); *NAIVE saturates at
 * INT64_MAX. */
int64_t te_memplan(PlanBuf *bufs, int n, int64_t *naive)
{
    TE_ASSERT(n >= 0);
    Order *order = malloc(sizeof *order * (size_t)(n + 1));
    Placed *conflicts = malloc(sizeof *conflicts * (size_t)(n + 1));
    int *placed = malloc(sizeof *placed * (size_t)(n + 1));
    if (!order || !conflicts || !placed) {
        fprintf(stderr, "texc: out of memory\n");
        exit(1);
    }
    int64_t sum = 0, peak = 0;
    bool overflow = false;
    for (int i = 0; i < n; i++) {
        TE_ASSERT(bufs[i].bytes >= 0 && bufs[i].first <= bufs[i].last);
        int64_t size = align_up(bufs[i].bytes);
        overflow |= size < 0;
        order[i] = (Order){ size < 0 ? INT64_MAX : size, bufs[i].first, i };
        if (size < 0 || __builtin_add_overflow(sum, size, &sum))
            sum = INT64_MAX;
    }
    *naive = sum;
    qsort(order, (size_t)n, sizeof *order, by_size_desc);

    int nplaced = 0;
    for (int k = 0; k < n && !overflow; k++) {
        PlanBuf *b = &bufs[order[k].index];
        int64_t size = order[k].size;
        /* the placed buffers live at the same time as B */
        int nc = 0;
        for (int j = 0; j < nplaced; j++) {
            const PlanBuf *o = &bufs[placed[j]];
            int64_t osize = align_up(o->bytes);
            if (osize > 0 && o->first <= b->last && b->first <= o->last)
                conflicts[nc++] = (Placed){ o->offset, osize };
        }
        qsort(conflicts, (size_t)nc, sizeof *conflicts, by_offset);
        /* first fit: the lowest gap that holds SIZE bytes */
        int64_t at = 0;
        for (int j = 0; j < nc && size > 0; j++) {
            if (conflicts[j].offset >= at && conflicts[j].offset - at >= size)
                break;
            int64_t end;
            if (__builtin_add_overflow(conflicts[j].offset, conflicts[j].size, &end)) {
                overflow = true;
                break;
            }
            if (end > at)
                at = end;
        }
        int64_t top;
        if (size == 0)
            at = 0;
        if (overflow || __builtin_add_overflow(at, size, &top)) {
            overflow = true;
            break;
        }
        b->offset = at;
        if (top > peak)
            peak = top;
        placed[nplaced++] = order[k].index;
    }
    free(order);
    free(conflicts);
    free(placed);
    return overflow ? -1 : peak;
}

void te_print_memplan(FILE *out, const PlanBuf *bufs, int n, int64_t naive, int64_t peak)
{
    for (int i = 0; i < n; i++)
        fprintf(out, "buffer %s : %" PRId64 " bytes, live [%d, %d], offset %" PRId64 "\n",
                bufs[i].name, bufs[i].bytes, bufs[i].first, bufs[i].last, bufs[i].offset);
    fprintf(out, "naive peak %" PRId64 " bytes, planned peak %" PRId64 " bytes", naive, peak);
    if (naive > 0 && peak >= 0 && peak < naive)
        fprintf(out, " (%.1f%% less)", 100.0 * (double)(naive - peak) / (double)naive);
    fputc('\n', out);
}
