/* wire.c — a bounds-checked reader of ONNX's protobuf wire format.
 *
 * An .onnx file is one ModelProto (onnx/onnx.proto) in protobuf's wire
 * format: a sequence of fields, each a key (field number << 3 | wire
 * type) and a value: a varint (0), 8 bytes (1), a length and that many
 * bytes (2: strings, bytes, sub-messages, packed repeated numbers) or 4
 * bytes (5).  This file reads the part of the schema texc uses (the graph,
 * its nodes, attributes, initializers and the types of its inputs and
 * outputs) straight from the mapped file, and skips every other field, as
 * protobuf's own readers do, so newer fields cost nothing.
 *
 * Why by hand rather than protobuf-c: the schema texc needs is about 40
 * fields; protobuf-c would copy every initializer into malloc'd memory
 * (a 500 MB model read twice), would add a build dependency and generated
 * code for a schema texc mostly ignores, and checks only the wire format
 * while the checks that matter here (dims, element counts, data lengths,
 * external-data paths) are ONNX's.  Here raw_data stays where it lies in
 * the mapping, and every read is checked against the end of its message.
 *
 * Errors unwind with longjmp to ox_read_model, which prints nothing more:
 * fail() has printed "PATH: error: ..." already.  All memory is the
 * caller's arena; the mappings live until the process ends (texc reads one
 * model per run).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.h"

typedef struct Wire {
    const uint8_t *p, *end;
} Wire;

typedef struct Field {
    uint32_t num; /* field number */
    int type;     /* wire type: 0, 1, 2 or 5 */
    uint64_t v;   /* types 0, 1 and 5 */
    Wire sub;     /* type 2: the bytes */
} Field;

typedef struct Reader {
    Arena *a;
    const char *path;
    bool in_memory; /* the bytes were given, not a file: no external data */
    jmp_buf fail;
    const char *what; /* the message being read, for errors */
} Reader;

static _Noreturn void fail(Reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void fail(Reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", r->path);
    vfprintf(stderr, fmt, ap);
    if (r->what)
        fprintf(stderr, " (in %s)", r->what);
    fputc('\n', stderr);
    va_end(ap);
    longjmp(r->fail, 1);
}

static uint64_t varint(Reader *r, Wire *w)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (w->p >= w->end)
            fail(r, "the file ends inside a number (truncated?)");
        uint8_t b = *w->p++;
        if (shift == 63 && b > 1)
            fail(r, "a number longer than 64 bits");
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail(r, "a number longer than 10 bytes");
}

static uint64_t fixed(Reader *r, Wire *w, int bytes)
{
    if (w->end - w->p < bytes)
        fail(r, "the file ends inside a field (truncated?)");
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)w->p[i] << (8 * i);
    w->p += bytes;
    return v;
}

/* The next field of W into F; false at W's end. */
static bool next_field(Reader *r, Wire *w, Field *f)
{
    if (w->p >= w->end)
        return false;
    uint64_t key = varint(r, w);
    f->num = (uint32_t)(key >> 3);
    f->type = (int)(key & 7);
    if (key >> 3 == 0 || key >> 32)
        fail(r, "a field number of %llu is not valid protobuf (not an ONNX file?)",
             (unsigned long long)(key >> 3));
    switch (f->type) {
    case 0:
        f->v = varint(r, w);
        break;
    case 1:
        f->v = fixed(r, w, 8);
        break;
    case 5:
        f->v = fixed(r, w, 4);
        break;
    case 2: {
        uint64_t n = varint(r, w);
        if (n > (uint64_t)(w->end - w->p))
            fail(r, "a field of %llu bytes runs past the end of its message (%zu bytes left; "
                    "truncated?)",
                 (unsigned long long)n, (size_t)(w->end - w->p));
        f->sub = (Wire){ w->p, w->p + n };
        w->p += n;
        break;
    }
    default:
        fail(r, "wire type %d (field %u) is not used by ONNX (not an ONNX file?)", f->type,
             f->num);
    }
    return true;
}

static void want_type(Reader *r, const Field *f, int type, const char *name)
{
    if (f->type != type)
        fail(r, "field %s (%u) has wire type %d, not %d", name, f->num, f->type, type);
}

static const char *string(Reader *r, const Field *f, const char *name)
{
    want_type(r, f, 2, name);
    size_t n = (size_t)(f->sub.end - f->sub.p);
    if (memchr(f->sub.p, 0, n))
        fail(r, "%s holds a NUL byte", name);
    return arena_strndup(r->a, (const char *)f->sub.p, n);
}

static int64_t int_field(Reader *r, const Field *f, const char *name)
{
    want_type(r, f, 0, name);
    return (int64_t)f->v;
}

/* A growing array of int64 in the arena. */
typedef struct Ints {
    int64_t *v;
    int n, cap;
} Ints;

static void ints_push(Reader *r, Ints *s, int64_t v)
{
    if (s->n == s->cap) {
        if (s->cap >= (1 << 28))
            fail(r, "more than 2^28 numbers in one field");
        int cap = s->cap ? 2 * s->cap : 8;
        int64_t *nv = arena_alloc(r->a, sizeof *nv * (size_t)cap);
        if (s->n)
            memcpy(nv, s->v, sizeof *nv * (size_t)s->n);
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = v;
}

/* A repeated varint field, packed or not. */
static void ints_field(Reader *r, const Field *f, Ints *s)
{
    if (f->type == 0) {
        ints_push(r, s, (int64_t)f->v);
    } else if (f->type == 2) {
        Wire w = f->sub;
        while (w.p < w.end)
            ints_push(r, s, (int64_t)varint(r, &w));
    } else {
        fail(r, "a list of integers has wire type %d", f->type);
    }
}

/* Bytes appended to a tensor's data: one packed field is used where it
 * lies; several, or unpacked numbers, are copied together. */
typedef struct Bytes {
    const uint8_t *p;
    size_t len, cap; /* cap 0: P is not ours */
} Bytes;

static void bytes_append(Reader *r, Bytes *b, const uint8_t *p, size_t n)
{
    if (b->len == 0 && b->cap == 0) {
        b->p = p;
        b->len = n;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n)
            cap *= 2;
        if (cap > TE_MAX_SOURCE_BYTES * (size_t)64)
            fail(r, "a tensor's data is too long");
        uint8_t *nb = arena_alloc(r->a, cap);
        memcpy(nb, b->p, b->len);
        b->p = nb;
        b->cap = cap;
    }
    memcpy((uint8_t *)b->p + b->len, p, n);
    b->len += n;
}

static int elem_bytes(int dtype)
{
    switch (dtype) {
    case OX_UINT8: case OX_INT8: case OX_BOOL:
        return 1;
    case OX_UINT16: case OX_INT16: case OX_FLOAT16: case OX_BFLOAT16:
        return 2;
    case OX_FLOAT: case OX_INT32: case OX_UINT32:
        return 4;
    case OX_INT64: case OX_DOUBLE: case OX_UINT64:
        return 8;
    default:
        return 0;
    }
}

const char *ox_dtype_name(int dtype)
{
    static const char *names[] = { "undefined", "float", "uint8", "int8", "uint16", "int16",
                                   "int32", "int64", "string", "bool", "float16", "double",
                                   "uint32", "uint64", "complex64", "complex128", "bfloat16" };
    return dtype >= 0 && dtype < (int)(sizeof names / sizeof names[0]) ? names[dtype]
                                                                        : "an unknown type";
}

/* Maps the external file LOCATION (relative to the model's folder, never
 * above it) and points T's data at [OFFSET, OFFSET + LENGTH) of it. */
static void external_data(Reader *r, OxTensor *t, const char *location, int64_t offset,
                          int64_t length, size_t want)
{
    if (r->in_memory)
        fail(r, "tensor '%s': external data needs a model file", t->name);
    if (!location || !*location)
        fail(r, "tensor '%s': external data without a location", t->name);
    if (location[0] == '/')
        fail(r, "tensor '%s': external data location '%s' is an absolute path; it must be "
                "inside the model's folder",
             t->name, location);
    for (const char *c = location; *c;) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if (n == 2 && c[0] == '.' && c[1] == '.')
            fail(r, "tensor '%s': external data location '%s' leaves the model's folder ('..')",
                 t->name, location);
        c += n + (slash != NULL);
    }
    const char *slash = strrchr(r->path, '/');
    const char *full = slash ? arena_printf(r->a, "%.*s/%s", (int)(slash - r->path), r->path,
                                            location)
                             : location;
    int fd = open(full, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        fail(r, "tensor '%s': cannot read its external data %s: %s", t->name, full,
             fd >= 0 && e == 0 ? "not a regular file" : strerror(e));
    }
    if (length < 0)
        length = (int64_t)st.st_size - offset;
    if (offset < 0 || offset > (int64_t)st.st_size || length > (int64_t)st.st_size - offset) {
        close(fd);
        fail(r, "tensor '%s': external data [%lld, +%lld) lies outside %s (%lld bytes)", t->name,
             (long long)offset, (long long)length, full, (long long)st.st_size);
    }
    if ((uint64_t)length != want) {
        close(fd);
        fail(r, "tensor '%s': its external data has %lld bytes; its shape needs %zu", t->name,
             (long long)length, want);
    }
    const uint8_t *map = NULL;
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            fail(r, "tensor '%s': cannot map %s: %s", t->name, full, strerror(errno));
        }
        map = p;
    }
    close(fd);
    t->data = map ? map + offset : (const uint8_t *)"";
    t->len = (size_t)length;
}

static void read_tensor(Reader *r, Wire w, OxTensor *t)
{
    Field f;
    Ints dims = { 0 }, ints = { 0 };
    Bytes data = { 0 };
    int data_fields = 0, field = 0;
    bool external = false;
    const char *location = NULL;
    int64_t offset = 0, length = -1;
    t->name = "";
    while (next_field(r, &w, &f)) {
        switch (f.num) {
        case 1:
            ints_field(r, &f, &dims);
            break;
        case 2:
            t->dtype = (int)int_field(r, &f, "data_type");
            break;
        case 8:
            t->name = string(r, &f, "the tensor's name");
            break;
        case 9: /* raw_data */
            want_type(r, &f, 2, "raw_data");
            bytes_append(r, &data, f.sub.p, (size_t)(f.sub.end - f.sub.p));
            data_fields |= 1 << 9;
            field = 9;
            break;
        case 4:  /* float_data */
        case 10: /* double_data */ {
            int n = f.num == 4 ? 4 : 8;
            if (f.type == 2) {
                bytes_append(r, &data, f.sub.p, (size_t)(f.sub.end - f.sub.p));
            } else if (f.type == (n == 4 ? 5 : 1)) {
                uint8_t le[8];
                for (int i = 0; i < n; i++)
                    le[i] = (uint8_t)(f.v >> (8 * i));
                bytes_append(r, &data, le, (size_t)n);
            } else {
                fail(r, "float_data/double_data with wire type %d", f.type);
            }
            data_fields |= 1 << f.num;
            field = (int)f.num;
            break;
        }
        case 5:  /* int32_data */
        case 7:  /* int64_data */
        case 11: /* uint64_data */
            ints_field(r, &f, &ints);
            data_fields |= 1 << f.num;
            field = (int)f.num;
            break;
        case 6: /* string_data */
            data_fields |= 1 << 6;
            field = 6;
            break;
        case 13: { /* external_data: key/value pairs */
            Wire kv = f.sub;
            Field g;
            const char *key = NULL, *value = NULL;
            if (f.type != 2)
                fail(r, "external_data with wire type %d", f.type);
            while (next_field(r, &kv, &g)) {
                if (g.num == 1)
                    key = string(r, &g, "an external_data key");
                else if (g.num == 2)
                    value = string(r, &g, "an external_data value");
            }
            if (!key || !value)
                break;
            char *end;
            if (strcmp(key, "location") == 0) {
                location = value;
            } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
                errno = 0;
                long long v = strtoll(value, &end, 10);
                if (errno || end == value || *end || v < 0)
                    fail(r, "external_data %s '%s' is not a number of bytes", key, value);
                *(strcmp(key, "offset") == 0 ? &offset : &length) = v;
            }
            break;
        }
        case 14:
            external = int_field(r, &f, "data_location") == 1;
            break;
        default:
            break;
        }
    }
    if (dims.n > OX_MAX_RANK)
        fail(r, "tensor '%s' has %d dims; texc takes at most %d", t->name, dims.n, OX_MAX_RANK);
    t->rank = dims.n;
    t->nelems = 1;
    for (int d = 0; d < dims.n; d++) {
        if (dims.v[d] < 0 || dims.v[d] > OX_MAX_ELEMS)
            fail(r, "tensor '%s': dim %d is %lld", t->name, d, (long long)dims.v[d]);
        t->dims[d] = dims.v[d];
        if (dims.v[d] && t->nelems > OX_MAX_ELEMS / dims.v[d])
            fail(r, "tensor '%s' has more than 2^40 elements", t->name);
        t->nelems *= dims.v[d];
    }
    if (data_fields & (data_fields - 1))
        fail(r, "tensor '%s' has its data in two fields", t->name);
    int size = elem_bytes(t->dtype);
    if (field == 6 || !size)
        fail(r, "tensor '%s' has type %s, which texc does not take", t->name,
             ox_dtype_name(t->dtype));
    size_t want = (size_t)t->nelems * (size_t)size;
    t->field = field;
    if (external) {
        if (field)
            fail(r, "tensor '%s' has external data and data of its own", t->name);
        external_data(r, t, location, offset, length, want);
        t->field = 9;
    } else if (field == 9 || field == 4 || field == 10) {
        int fsize = field == 9 ? size : field == 4 ? 4 : 8;
        if ((field == 4 && t->dtype != OX_FLOAT) ||
            (field == 10 && t->dtype != OX_DOUBLE))
            fail(r, "tensor '%s' of type %s keeps its data in the %s field", t->name,
                 ox_dtype_name(t->dtype), field == 4 ? "float_data" : "double_data");
        if (data.len != (size_t)t->nelems * (size_t)fsize)
            fail(r, "tensor '%s' has %zu bytes of data; its shape and type need %zu", t->name,
                 data.len, (size_t)t->nelems * (size_t)fsize);
        t->data = data.p;
        t->len = data.len;
    } else if (field == 5 || field == 7 || field == 11) {
        bool ok = field == 7 ? t->dtype == OX_INT64
                  : field == 11 ? t->dtype == OX_UINT64 || t->dtype == OX_UINT32
                                : size <= 4 && t->dtype != OX_FLOAT && t->dtype != OX_UINT32;
        if (!ok)
            fail(r, "tensor '%s' of type %s keeps its data in the wrong field (%d)", t->name,
                 ox_dtype_name(t->dtype), field);
        if (ints.n != t->nelems)
            fail(r, "tensor '%s' has %d values; its shape needs %lld", t->name, ints.n,
                 (long long)t->nelems);
        t->ints = ints.v;
    } else if (t->nelems > 0) {
        fail(r, "tensor '%s' has no data", t->name);
    }
}

static void read_attr(Reader *r, Wire w, OxAttr *at)
{
    Field f;
    Ints ints = { 0 }, floats = { 0 };
    at->name = "";
    int seen = 0;
    while (next_field(r, &w, &f)) {
        switch (f.num) {
        case 1:
            at->name = string(r, &f, "an attribute's name");
            break;
        case 20:
            at->type = (int)int_field(r, &f, "an attribute's type");
            break;
        case 2:
            want_type(r, &f, 5, "an attribute's float");
            {
                uint32_t bits = (uint32_t)f.v;
                float v;
                memcpy(&v, &bits, 4);
                at->f = v;
            }
            seen = seen ? seen : OX_A_FLOAT;
            break;
        case 3:
            at->i = int_field(r, &f, "an attribute's int");
            seen = seen ? seen : OX_A_INT;
            break;
        case 4:
            want_type(r, &f, 2, "an attribute's string");
            at->s = arena_strndup(r->a, (const char *)f.sub.p, (size_t)(f.sub.end - f.sub.p));
            seen = seen ? seen : OX_A_STRING;
            break;
        case 5:
            want_type(r, &f, 2, "an attribute's tensor");
            at->t = arena_alloc(r->a, sizeof *at->t);
            read_tensor(r, f.sub, at->t);
            seen = seen ? seen : OX_A_TENSOR;
            break;
        case 6:
            seen = seen ? seen : OX_A_GRAPH; /* subgraphs: not read (no op texc takes has one) */
            break;
        case 7:
            if (f.type == 5) {
                ints_push(r, &floats, (int64_t)f.v);
            } else {
                want_type(r, &f, 2, "an attribute's floats");
                Wire p = f.sub;
                while (p.p < p.end)
                    ints_push(r, &floats, (int64_t)fixed(r, &p, 4));
            }
            seen = seen ? seen : OX_A_FLOATS;
            break;
        case 8:
            ints_field(r, &f, &ints);
            seen = seen ? seen : OX_A_INTS;
            break;
        default:
            break;
        }
    }
    if (!at->type)
        at->type = seen;
    at->ints = ints.v;
    at->nints = ints.n;
    at->nfloats = floats.n;
    at->floats = arena_alloc(r->a, sizeof *at->floats * (size_t)(floats.n + 1));
    for (int i = 0; i < floats.n; i++) {
        uint32_t bits = (uint32_t)floats.v[i];
        float v;
        memcpy(&v, &bits, 4);
        at->floats[i] = v;
    }
}

/* Counts the fields numbered NUM in W. */
static int count_fields(Reader *r, Wire w, uint32_t num)
{
    Field f;
    int n = 0;
    while (next_field(r, &w, &f))
        n += f.num == num;
    return n;
}

static void read_node(Reader *r, Wire w, OxNode *n)
{
    Field f;
    n->name = n->op = n->domain = "";
    n->inputs = arena_alloc(r->a, sizeof *n->inputs * (size_t)(count_fields(r, w, 1) + 1));
    n->outputs = arena_alloc(r->a, sizeof *n->outputs * (size_t)(count_fields(r, w, 2) + 1));
    n->attrs = arena_alloc(r->a, sizeof *n->attrs * (size_t)(count_fields(r, w, 5) + 1));
    while (next_field(r, &w, &f)) {
        switch (f.num) {
        case 1:
            n->inputs[n->ninputs++] = string(r, &f, "a node's input");
            break;
        case 2:
            n->outputs[n->noutputs++] = string(r, &f, "a node's output");
            break;
        case 3:
            n->name = string(r, &f, "a node's name");
            break;
        case 4:
            n->op = string(r, &f, "a node's op_type");
            break;
        case 7:
            n->domain = string(r, &f, "a node's domain");
            break;
        case 5:
            want_type(r, &f, 2, "a node's attribute");
            read_attr(r, f.sub, &n->attrs[n->nattrs++]);
            break;
        default:
            break;
        }
    }
}

static void read_value_info(Reader *r, Wire w, OxValueInfo *v)
{
    Field f, g, h, d;
    v->name = "";
    v->rank = -1;
    while (next_field(r, &w, &f)) {
        if (f.num == 1) {
            v->name = string(r, &f, "a value's name");
        } else if (f.num == 2) { /* TypeProto */
            want_type(r, &f, 2, "a value's type");
            Wire tp = f.sub;
            while (next_field(r, &tp, &g)) {
                if (g.num != 1) /* sequence, map, optional, sparse: not tensors */
                    continue;
                want_type(r, &g, 2, "a tensor type");
                Wire tt = g.sub;
                while (next_field(r, &tt, &h)) {
                    if (h.num == 1) {
                        v->dtype = (int)int_field(r, &h, "elem_type");
                    } else if (h.num == 2) {
                        want_type(r, &h, 2, "a shape");
                        Wire sh = h.sub;
                        v->rank = 0;
                        while (next_field(r, &sh, &d)) {
                            if (d.num != 1)
                                continue;
                            if (v->rank == OX_MAX_RANK)
                                fail(r, "value '%s' has more than %d dims", v->name,
                                     OX_MAX_RANK);
                            want_type(r, &d, 2, "a dim");
                            Wire dw = d.sub;
                            Field e;
                            int k = v->rank++;
                            v->dims[k] = -1;
                            v->params[k] = NULL;
                            while (next_field(r, &dw, &e)) {
                                if (e.num == 1)
                                    v->dims[k] = int_field(r, &e, "dim_value");
                                else if (e.num == 2)
                                    v->params[k] = string(r, &e, "dim_param");
                            }
                        }
                    }
                }
            }
        }
    }
}

static void read_graph(Reader *r, Wire w, OxModel *m)
{
    Field f;
    r->what = "the graph";
    m->nodes = arena_alloc(r->a, sizeof *m->nodes * (size_t)(count_fields(r, w, 1) + 1));
    m->inits = arena_alloc(r->a, sizeof *m->inits * (size_t)(count_fields(r, w, 5) + 1));
    m->inputs = arena_alloc(r->a, sizeof *m->inputs * (size_t)(count_fields(r, w, 11) + 1));
    m->outputs = arena_alloc(r->a, sizeof *m->outputs * (size_t)(count_fields(r, w, 12) + 1));
    while (next_field(r, &w, &f)) {
        switch (f.num) {
        case 1:
            want_type(r, &f, 2, "a node");
            r->what = arena_printf(r->a, "node %d", m->nnodes);
            read_node(r, f.sub, &m->nodes[m->nnodes++]);
            break;
        case 5:
            want_type(r, &f, 2, "an initializer");
            r->what = arena_printf(r->a, "initializer %d", m->ninits);
            read_tensor(r, f.sub, &m->inits[m->ninits++]);
            break;
        case 11:
            want_type(r, &f, 2, "an input");
            r->what = "the graph's inputs";
            read_value_info(r, f.sub, &m->inputs[m->ninputs++]);
            break;
        case 12:
            want_type(r, &f, 2, "an output");
            r->what = "the graph's outputs";
            read_value_info(r, f.sub, &m->outputs[m->noutputs++]);
            break;
        case 15:
            r->what = NULL;
            fail(r, "the graph has sparse initializers, which texc does not take");
        default:
            break;
        }
    }
    r->what = NULL;
}

static void read_model(Reader *r, Wire w, OxModel *m)
{
    Field f;
    bool graph = false;
    const char *producer = "", *version = "";
    m->opset = -1;
    bool default_opset = false;
    while (next_field(r, &w, &f)) {
        switch (f.num) {
        case 1:
            m->ir_version = int_field(r, &f, "ir_version");
            break;
        case 2:
            producer = string(r, &f, "producer_name");
            break;
        case 3:
            version = string(r, &f, "producer_version");
            break;
        case 8: {
            want_type(r, &f, 2, "opset_import");
            Wire o = f.sub;
            Field g;
            const char *domain = "";
            int64_t v = -1;
            while (next_field(r, &o, &g)) {
                if (g.num == 1)
                    domain = string(r, &g, "an opset's domain");
                else if (g.num == 2)
                    v = int_field(r, &g, "an opset's version");
            }
            if (!*domain || strcmp(domain, "ai.onnx") == 0) {
                m->opset = v;
                default_opset = true;
            }
            break;
        }
        case 7:
            want_type(r, &f, 2, "graph");
            if (graph)
                fail(r, "the model has two graphs");
            graph = true;
            read_graph(r, f.sub, m);
            break;
        default:
            break;
        }
    }
    if (!graph)
        fail(r, "no graph in the model (not an ONNX model?)");
    if (!default_opset)
        m->opset = 0; /* only other domains' ops (ai.onnx.preview.training): none converts */
    else if (m->opset < 1 || m->opset > 1000)
        fail(r, "the model imports no valid version of the default opset (ai.onnx)");
    m->producer = *version ? arena_printf(r->a, "%s %s", producer, version) : producer;
}

/* The setjmp in a function of its own: nothing it sets is read after a
 * longjmp. */
static bool read_bytes(Reader *r, const uint8_t *bytes, size_t len, OxModel *m)
{
    if (setjmp(r->fail))
        return false;
    read_model(r, (Wire){ bytes, bytes + len }, m);
    return true;
}

bool ox_read_model(Arena *a, const char *path, const uint8_t *bytes, size_t len, OxModel *m)
{
    Reader r = { .a = a, .path = path, .in_memory = bytes != NULL };
    memset(m, 0, sizeof *m);
    m->path = path;
    if (!bytes) {
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            fprintf(stderr, "texc: cannot read %s: %s\n", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return false;
        }
        if (!S_ISREG(st.st_mode) || st.st_size == 0) {
            fprintf(stderr, "%s: error: %s\n", path,
                    S_ISREG(st.st_mode) ? "the file is empty" : "not a regular file");
            close(fd);
            return false;
        }
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (p == MAP_FAILED) {
            fprintf(stderr, "texc: cannot map %s: %s\n", path, strerror(errno));
            return false;
        }
        bytes = p;
        len = (size_t)st.st_size;
    }
    return read_bytes(&r, bytes, len, m);
}

static double bf16_value(uint16_t bits)
{
    uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

double ox_tensor_value(const OxTensor *t, int64_t i)
{
    if (t->ints) {
        int64_t v = t->ints[i];
        switch (t->dtype) {
        case OX_FLOAT16:
            return dtype_f16_value((uint16_t)v);
        case OX_BFLOAT16:
            return bf16_value((uint16_t)v);
        case OX_UINT64:
        case OX_UINT32:
            return (double)(uint64_t)v;
        case OX_BOOL:
            return v != 0;
        default:
            return (double)v;
        }
    }
    int size = t->field == 4 ? 4 : t->field == 10 ? 8 : elem_bytes(t->dtype);
    const uint8_t *p = t->data + (size_t)i * (size_t)size;
    uint64_t u = 0;
    for (int k = 0; k < size; k++)
        u |= (uint64_t)p[k] << (8 * k);
    switch (t->dtype) {
    case OX_FLOAT: {
        uint32_t b = (uint32_t)u;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    case OX_DOUBLE: {
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    case OX_FLOAT16:
        return dtype_f16_value((uint16_t)u);
    case OX_BFLOAT16:
        return bf16_value((uint16_t)u);
    case OX_INT8:
        return (int8_t)u;
    case OX_INT16:
        return (int16_t)u;
    case OX_INT32:
        return (int32_t)u;
    case OX_INT64:
        return (double)(int64_t)u;
    case OX_BOOL:
        return u != 0;
    default: /* unsigned */
        return (double)u;
    }
}
