/* npy.c — NumPy .npy files: how inputs come in and outputs go out.
 *
 * npy_write writes format 1.0: the magic "\x93NUMPY", version 1.0, a
 * little-endian u16 header length, then the header dict
 *
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (512, 3072), }
 *
 * padded with spaces and ended by '\n' so that the data starts at a
 * multiple of 64 bytes, then the data in C order.  The descr is the
 * tensor's dtype's (dtype_npy): bf16, which NumPy lacks, is written as f32
 * holding the bf16-rounded values.  Everything is encoded byte by byte in
 * little-endian order, so the files are the same on any host.
 *
 * npy_read accepts versions 1.0, 2.0 and 3.0, C order, little-endian (or
 * byte-order-free '|') bool, signed and unsigned integers and f2/f4/f8; the
 * shape must equal the tensor's exactly and the file must hold exactly the
 * data the header promises.  The header dict is parsed by hand: keys in
 * any order, either quote, any spacing, a trailing comma.  Data is
 * converted in fixed-size chunks, so neither function holds a second copy
 * of a large tensor.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fseeko, ftello */
#endif
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "texc.h"

enum {
    NPY_ALIGN = 64,            /* the data's offset is a multiple of this */
    NPY_CHUNK = 1 << 16,       /* bytes converted at a time */
    NPY_MAX_HEADER = 1 << 20,  /* a longer header is not a tensor's */
};

static const char npy_magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* "(3, 4)", "(5,)" or "()", as NumPy writes a shape. */
static void format_shape(char *buf, size_t size, const int64_t *shape, int rank)
{
    size_t len = 0;
    buf[len++] = '(';
    for (int d = 0; d < rank && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld",
                                d ? ", " : "", (long long)shape[d]);
    if (len < size)
        snprintf(buf + len, size - len, rank == 1 ? ",)" : ")");
}

/* Writing. */

int npy_encode(DType t, double v, unsigned char *p, bool bf16_bits)
{
    union {
        float f;
        uint32_t u;
    } f32;
    union {
        double f;
        uint64_t u;
    } f64;
    switch (t) {
    case DT_BOOL:
        p[0] = v != 0.0;
        return 1;
    case DT_I32:
        put_le(p, (uint32_t)(int32_t)dtype_round(DT_I32, v), 4);
        return 4;
    case DT_U8:
    case DT_I8: /* two's complement: -1 is 0xff */
        p[0] = (unsigned char)(int)dtype_round(t, v);
        return 1;
    case DT_F16:
        put_le(p, dtype_f16_bits(v), 2);
        return 2;
    case DT_BF16:
        f32.f = (float)dtype_round(t, v);
        if (bf16_bits) { /* the top half of the f32 it rounds to */
            put_le(p, f32.u >> 16, 2);
            return 2;
        }
        put_le(p, f32.u, 4); /* as f32, NumPy having no bf16 */
        return 4;
    case DT_F32:
        f32.f = (float)dtype_round(t, v);
        put_le(p, f32.u, 4);
        return 4;
    case DT_F64:
        f64.f = v;
        put_le(p, f64.u, 8);
        return 8;
    default:
        TE_UNREACHABLE();
    }
}

static int write_all(FILE *f, const void *buf, size_t n)
{
    if (fwrite(buf, 1, n, f) == n)
        return 0;
    if (!errno)
        errno = EIO;
    return -1;
}

static int write_npy(FILE *f, const Tensor *t, const double *data)
{
    char shape[TE_MAX_RANK * 24 + 8];
    format_shape(shape, sizeof shape, t->shape, t->rank);
    char header[sizeof shape + 128];
    int len = snprintf(header, sizeof header,
                       "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       dtype_npy(t->dtype), shape);
    /* Pad so that 10 bytes of preamble + the header end on the boundary,
     * keeping room for the '\n'. */
    int total = (10 + len + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    int header_len = total - 10;
    TE_ASSERT(header_len < (int)sizeof header && header_len <= UINT16_MAX);
    memset(header + len, ' ', (size_t)(header_len - len - 1));
    header[header_len - 1] = '\n';

    unsigned char preamble[10];
    memcpy(preamble, npy_magic, 6);
    preamble[6] = 1;
    preamble[7] = 0;
    put_le(preamble + 8, (uint64_t)header_len, 2);
    if (write_all(f, preamble, sizeof preamble) ||
        write_all(f, header, (size_t)header_len))
        return -1;

    unsigned char *chunk = malloc(NPY_CHUNK);
    if (!chunk) {
        errno = ENOMEM;
        return -1;
    }
    size_t fill = 0;
    int64_t n = tensor_elems(t);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        fill += (size_t)npy_encode(t->dtype, data[i], chunk + fill, false);
        if (fill > NPY_CHUNK - 8) {
            rc = write_all(f, chunk, fill);
            fill = 0;
        }
    }
    if (rc == 0)
        rc = write_all(f, chunk, fill);
    free(chunk);
    return rc;
}

/* A failed write leaves no partial file behind. */
int npy_write_file(FILE *f, const Tensor *t, const double *data)
{
    return write_npy(f, t, data);
}

int npy_write(const char *path, const Tensor *t, const double *data)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    errno = 0;
    int rc = write_npy(f, t, data);
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno ? errno : EIO;
    }
    if (rc != 0) {
        remove(path);
        errno = saved;
    }
    return rc;
}

/* Reading. */

static int read_error(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int read_error(const char *path, const char *fmt, ...)
{
    fprintf(stderr, "texc: %s: ", path);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

/* What the header says about the data. */
typedef struct NpyHeader {
    char kind;        /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float */
    int size;         /* bytes per element */
    bool fortran;     /* fortran_order */
    int rank;
    int64_t shape[TE_MAX_RANK];
    bool has_descr, has_order, has_shape;
} NpyHeader;

/* A cursor in the header text; on error, MSG says why. */
typedef struct HeaderParser {
    const char *at, *end;
    const char *msg;
} HeaderParser;

static void skip_space(HeaderParser *hp)
{
    while (hp->at < hp->end && (*hp->at == ' ' || *hp->at == '\t' ||
                                *hp->at == '\n' || *hp->at == '\r'))
        hp->at++;
}

static bool expect(HeaderParser *hp, char c)
{
    skip_space(hp);
    if (hp->at < hp->end && *hp->at == c) {
        hp->at++;
        return true;
    }
    if (!hp->msg)
        hp->msg = "malformed header";
    return false;
}

/* string = "'" chars "'" | '"' chars '"' */
static bool parse_string(HeaderParser *hp, const char **s, size_t *len)
{
    skip_space(hp);
    if (hp->at >= hp->end || (*hp->at != '\'' && *hp->at != '"')) {
        hp->msg = "malformed header: expected a string";
        return false;
    }
    char quote = *hp->at++;
    const char *begin = hp->at;
    while (hp->at < hp->end && *hp->at != quote)
        hp->at++;
    if (hp->at >= hp->end) {
        hp->msg = "malformed header: unterminated string";
        return false;
    }
    *s = begin;
    *len = (size_t)(hp->at - begin);
    hp->at++;
    return true;
}

static bool is_word(HeaderParser *hp, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(hp->end - hp->at) >= n && memcmp(hp->at, word, n) == 0) {
        hp->at += n;
        return true;
    }
    return false;
}

/* descr: '<f4', '|b1', ... */
static bool parse_descr(HeaderParser *hp, NpyHeader *h)
{
    if (hp->at < hp->end && *hp->at == '[') {
        hp->msg = "structured dtypes are not supported";
        return false;
    }
    const char *s;
    size_t len;
    if (!parse_string(hp, &s, &len))
        return false;
    if (len != 3 || !strchr("<|>=", s[0]) || !strchr("biuf", s[1]) ||
        s[2] < '1' || s[2] > '8') {
        hp->msg = "unsupported dtype";
        return false;
    }
    int size = s[2] - '0';
    bool ok;
    switch (s[1]) {
    case 'b':
        ok = size == 1;
        break;
    case 'i':
    case 'u':
        ok = size == 1 || size == 2 || size == 4 || size == 8;
        break;
    default:
        ok = size == 2 || size == 4 || size == 8;
        break;
    }
    if (!ok) {
        hp->msg = "unsupported dtype";
        return false;
    }
    if (s[0] != '<' && size > 1) {
        hp->msg = s[0] == '>' ? "big-endian data is not supported"
                              : "data without a little-endian byte order ('<') "
                                "is not supported";
        return false;
    }
    h->kind = s[1];
    h->size = size;
    return true;
}

/* shape = "(" [int {"," int} [","]] ")" */
static bool parse_shape(HeaderParser *hp, NpyHeader *h)
{
    if (!expect(hp, '('))
        return false;
    h->rank = 0;
    for (;;) {
        skip_space(hp);
        if (hp->at < hp->end && *hp->at == ')') {
            hp->at++;
            return true;
        }
        if (hp->at >= hp->end || *hp->at < '0' || *hp->at > '9') {
            hp->msg = "malformed header: bad shape";
            return false;
        }
        int64_t v = 0;
        while (hp->at < hp->end && *hp->at >= '0' && *hp->at <= '9') {
            if (v > (INT64_MAX - 9) / 10) {
                hp->msg = "malformed header: shape too large";
                return false;
            }
            v = v * 10 + (*hp->at++ - '0');
        }
        if (hp->at < hp->end && *hp->at == 'L')
            hp->at++; /* Python 2's long */
        if (h->rank == TE_MAX_RANK) {
            hp->msg = "too many dimensions";
            return false;
        }
        h->shape[h->rank++] = v;
        skip_space(hp);
        if (hp->at < hp->end && *hp->at == ',')
            hp->at++;
        else if (hp->at >= hp->end || *hp->at != ')') {
            hp->msg = "malformed header: bad shape";
            return false;
        }
    }
}

/* dict = "{" { string ":" value "," } [string ":" value] "}" */
static bool parse_header(const char *text, size_t len, NpyHeader *h,
                         const char **msg)
{
    HeaderParser hp = { text, text + len, NULL };
    memset(h, 0, sizeof *h);
    if (!expect(&hp, '{'))
        goto fail;
    for (;;) {
        skip_space(&hp);
        if (hp.at < hp.end && *hp.at == '}')
            break;
        const char *key;
        size_t key_len;
        if (!parse_string(&hp, &key, &key_len) || !expect(&hp, ':'))
            goto fail;
        skip_space(&hp);
        if (key_len == 5 && memcmp(key, "descr", 5) == 0) {
            if (!parse_descr(&hp, h))
                goto fail;
            h->has_descr = true;
        } else if (key_len == 13 && memcmp(key, "fortran_order", 13) == 0) {
            if (is_word(&hp, "True"))
                h->fortran = true;
            else if (is_word(&hp, "False"))
                h->fortran = false;
            else {
                hp.msg = "malformed header: bad fortran_order";
                goto fail;
            }
            h->has_order = true;
        } else if (key_len == 5 && memcmp(key, "shape", 5) == 0) {
            if (!parse_shape(&hp, h))
                goto fail;
            h->has_shape = true;
        } else {
            hp.msg = "malformed header: unknown key";
            goto fail;
        }
        skip_space(&hp);
        if (hp.at < hp.end && *hp.at == ',')
            hp.at++;
        else if (hp.at >= hp.end || *hp.at != '}') {
            hp.msg = "malformed header";
            goto fail;
        }
    }
    if (!h->has_descr || !h->has_order || !h->has_shape) {
        *msg = "malformed header: descr, fortran_order or shape is missing";
        return false;
    }
    return true;
fail:
    *msg = hp.msg ? hp.msg : "malformed header";
    return false;
}

/* The element at P, of the header's kind and size, as a double. */
static double decode(const NpyHeader *h, const unsigned char *p)
{
    uint64_t u = get_le(p, h->size);
    union {
        uint32_t u;
        float f;
    } f32;
    union {
        uint64_t u;
        double f;
    } f64;
    switch (h->kind) {
    case 'b':
        return u != 0;
    case 'u':
        return (double)u;
    case 'i':
        if (h->size < 8 && (u >> (8 * h->size - 1)))
            u |= ~(uint64_t)0 << (8 * h->size); /* sign-extend */
        return (double)(int64_t)u;
    default:
        switch (h->size) {
        case 2:
            return dtype_f16_value((uint16_t)u);
        case 4:
            f32.u = (uint32_t)u;
            return f32.f;
        default:
            f64.u = u;
            return f64.f;
        }
    }
}

/* F's header into H, and where its data starts; -1 after the message. */
static int read_header(FILE *f, const char *path, NpyHeader *hp, size_t *offset)
{
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, npy_magic, 6) != 0)
        return read_error(path, "not a .npy file");
    int major = pre[6];
    size_t header_len, data_offset;
    if (major == 1) {
        header_len = (size_t)get_le(pre + 8, 2);
        data_offset = 10 + header_len;
    } else if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, f) != 2)
            return read_error(path, "truncated header");
        header_len = (size_t)get_le(pre + 8, 4);
        data_offset = 12 + header_len;
    } else {
        return read_error(path, "unsupported .npy version %d.%d", major, pre[7]);
    }
    if (header_len > NPY_MAX_HEADER)
        return read_error(path, "header too long (%zu bytes)", header_len);
    char *text = malloc(header_len + 1);
    if (!text)
        return read_error(path, "out of memory");
    if (fread(text, 1, header_len, f) != header_len) {
        free(text);
        return read_error(path, "truncated header");
    }
    text[header_len] = '\0';
    NpyHeader h;
    const char *msg;
    bool ok = parse_header(text, header_len, &h, &msg);
    free(text);
    if (!ok)
        return read_error(path, "%s", msg);
    if (h.fortran)
        return read_error(path, "fortran_order arrays are not supported");
    *hp = h;
    *offset = data_offset;
    return 0;
}

static int read_npy(FILE *f, const char *path, const Tensor *t, double *data)
{
    NpyHeader h;
    size_t data_offset;
    if (read_header(f, path, &h, &data_offset) < 0)
        return -1;

    bool same = h.rank == t->rank;
    for (int d = 0; same && d < h.rank; d++)
        same = h.shape[d] == t->shape[d];
    if (!same) {
        char have[TE_MAX_RANK * 24 + 8], want[TE_MAX_RANK * 24 + 8];
        format_shape(have, sizeof have, h.shape, h.rank);
        format_shape(want, sizeof want, t->shape, t->rank);
        return read_error(path, "shape %s does not match %s's shape %s", have,
                          t->name, want);
    }

    int64_t n = tensor_elems(t);
    if (fseeko(f, 0, SEEK_END) != 0)
        return read_error(path, "%s", strerror(errno));
    off_t size = ftello(f);
    int64_t want_size = (int64_t)data_offset + n * h.size;
    if (size < 0 || (int64_t)size != want_size)
        return read_error(path, "file is %lld bytes, but its header describes "
                                "%lld",
                          (long long)size, (long long)want_size);
    if (fseeko(f, (off_t)data_offset, SEEK_SET) != 0)
        return read_error(path, "%s", strerror(errno));

    unsigned char *chunk = malloc(NPY_CHUNK);
    if (!chunk)
        return read_error(path, "out of memory");
    int64_t per_chunk = NPY_CHUNK / h.size;
    for (int64_t i = 0; i < n;) {
        int64_t count = n - i < per_chunk ? n - i : per_chunk;
        size_t bytes = (size_t)(count * h.size);
        if (fread(chunk, 1, bytes, f) != bytes) {
            free(chunk);
            return read_error(path, "%s",
                              ferror(f) ? strerror(errno) : "truncated data");
        }
        for (int64_t k = 0; k < count; k++) {
            /* stored as the input's dtype stores it: rounded to a float
               dtype; an integer or bool input takes only its values */
            double v = decode(&h, chunk + k * h.size), r = dtype_round(t->dtype, v);
            if (!dtype_is_float(t->dtype) && r != v) {
                free(chunk);
                return read_error(path, "value %lld is %g, which the %s input %s cannot hold",
                                  (long long)(i + k), v, dtype_name(t->dtype), t->name);
            }
            data[i + k] = r;
        }
        i += count;
    }
    free(chunk);
    return 0;
}

int npy_read_file(FILE *f, const char *path, const Tensor *t, double *data)
{
    return read_npy(f, path, t, data);
}

int npy_read_shape(const char *path, int *rank, int64_t *shape)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return read_error(path, "%s", strerror(errno));
    NpyHeader h;
    size_t offset;
    int rc = read_header(f, path, &h, &offset);
    fclose(f);
    if (rc == 0) {
        *rank = h.rank;
        memcpy(shape, h.shape, sizeof *shape * (size_t)h.rank);
    }
    return rc;
}

int npy_read(const char *path, const Tensor *t, double *data)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return read_error(path, "%s", strerror(errno));
    int rc = read_npy(f, path, t, data);
    fclose(f);
    return rc;
}
