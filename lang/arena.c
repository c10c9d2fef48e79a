/* arena.c — bump allocation for everything a compilation builds.
 *
 * An Arena is a singly linked list of blocks, the newest first.  Small
 * requests are carved from the head block, 16-byte aligned and zeroed; when
 * the head is full a new 64 KiB block is pushed.  A request larger than a
 * quarter of the default block gets a block of its own, linked *behind* the
 * head so the head's free tail stays in use.  Nothing is ever freed one by
 * one: arena_free releases every block, and an Arena that is all zeroes is a
 * valid empty arena.  Running out of memory is fatal (there is nothing a
 * compiler can sensibly do without it), so callers never check for NULL.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "texc.h"

enum {
    ARENA_BLOCK_SIZE = 64 * 1024, /* default payload of a block */
    ARENA_ALIGN = 16,             /* every allocation's alignment */
};

struct ArenaBlock {
    ArenaBlock *next; /* the next older block */
    size_t used;      /* bytes of mem handed out, including padding */
    size_t cap;       /* bytes in mem */
    unsigned char mem[];
};

static _Noreturn void out_of_memory(size_t size)
{
    fprintf(stderr, "texc: out of memory (allocating %zu bytes)\n", size);
    exit(1);
}

/* A block whose payload holds SIZE bytes at any alignment. */
static ArenaBlock *block_new(size_t size)
{
    if (size > SIZE_MAX - sizeof(ArenaBlock) - ARENA_ALIGN)
        out_of_memory(size);
    ArenaBlock *b = malloc(sizeof(ArenaBlock) + size + ARENA_ALIGN);
    if (!b)
        out_of_memory(size);
    b->next = NULL;
    b->used = 0;
    b->cap = size + ARENA_ALIGN;
    return b;
}

/* Carves SIZE bytes from B, or returns NULL when B has no room.  The
 * alignment is computed on the address, so it does not depend on what
 * malloc guarantees. */
static void *block_take(ArenaBlock *b, size_t size)
{
    uintptr_t base = (uintptr_t)(b->mem + b->used);
    size_t pad = (size_t)(-base & (ARENA_ALIGN - 1));
    if (b->cap - b->used < pad || b->cap - b->used - pad < size)
        return NULL;
    void *p = b->mem + b->used + pad;
    b->used += pad + size;
    return p;
}

void *arena_alloc(Arena *a, size_t size)
{
    if (size == 0)
        size = 1; /* distinct allocations get distinct addresses */
    void *p = a->head ? block_take(a->head, size) : NULL;
    if (!p) {
        if (size > ARENA_BLOCK_SIZE / 4) {
            ArenaBlock *big = block_new(size);
            if (a->head) {
                big->next = a->head->next;
                a->head->next = big;
            } else {
                a->head = big;
            }
            p = block_take(big, size);
        } else {
            ArenaBlock *b = block_new(ARENA_BLOCK_SIZE);
            b->next = a->head;
            a->head = b;
            p = block_take(b, size);
        }
        TE_ASSERT(p != NULL);
    }
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *copy = arena_alloc(a, n + 1); /* zeroed: the NUL is already there */
    memcpy(copy, s, n);
    return copy;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    TE_ASSERT(n >= 0);
    char *s = arena_alloc(a, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

void arena_free(Arena *a)
{
    ArenaBlock *b = a->head;
    while (b) {
        ArenaBlock *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* The old array is left in the arena: doubling keeps the waste below the
 * final size.  V may come full (len == cap) from an exact-size array. */
void vec_push(Arena *a, PtrVec *v, void *item)
{
    if (v->len >= v->cap) {
        TE_ASSERT(v->len < INT32_MAX / 2);
        int cap = v->cap < 8 ? 8 : v->cap * 2;
        while (cap <= v->len)
            cap *= 2;
        void **items = arena_alloc(a, (size_t)cap * sizeof *items);
        if (v->len)
            memcpy(items, v->items, (size_t)v->len * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = item;
}

/* KEY's slot in M: where it is, or the free slot where it would go.
 * STRINGS: keys are compared and hashed (FNV-1a) by their contents. */
static size_t map_slot(const PtrMap *m, const void *key, bool strings)
{
    size_t h;
    if (strings) {
        uint64_t f = 0xcbf29ce484222325u;
        for (const char *c = key; *c; c++)
            f = (f ^ (unsigned char)*c) * 0x100000001b3u;
        h = (size_t)f;
    } else {
        h = (size_t)((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15u;
    }
    size_t i = h & (m->cap - 1);
    while (m->keys[i] && (strings ? strcmp(m->keys[i], key) != 0 : m->keys[i] != key))
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* The slot for KEY, made room for: growing leaves the old arrays in the
 * arena, as vec_push does. */
static size_t map_room(Arena *a, PtrMap *m, const void *key, bool strings)
{
    TE_ASSERT(key);
    if (2 * (m->len + 1) > m->cap) {
        size_t cap = m->cap < 16 ? 16 : m->cap * 2;
        PtrMap grown = { arena_alloc(a, sizeof *grown.keys * cap),
                         arena_alloc(a, sizeof *grown.vals * cap), cap, m->len };
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = map_slot(&grown, m->keys[i], strings);
                grown.keys[j] = m->keys[i];
                grown.vals[j] = m->vals[i];
            }
        *m = grown;
    }
    return map_slot(m, key, strings);
}

static bool map_store(Arena *a, PtrMap *m, const void *key, int val, bool strings, bool replace)
{
    TE_ASSERT(val >= 0);
    size_t i = map_room(a, m, key, strings);
    if (m->keys[i] && !replace)
        return false;
    if (!m->keys[i])
        m->len++;
    m->keys[i] = key;
    m->vals[i] = val;
    return true;
}

static int map_find(const PtrMap *m, const void *key, bool strings)
{
    if (!m->cap)
        return -1;
    size_t i = map_slot(m, key, strings);
    return m->keys[i] ? m->vals[i] : -1;
}

bool map_put(Arena *a, PtrMap *m, const void *key, int val)
{
    return map_store(a, m, key, val, false, false);
}

void map_set(Arena *a, PtrMap *m, const void *key, int val)
{
    map_store(a, m, key, val, false, true);
}

int map_get(const PtrMap *m, const void *key)
{
    return map_find(m, key, false);
}

void strmap_set(Arena *a, PtrMap *m, const char *key, int val)
{
    map_store(a, m, key, val, true, true);
}

int strmap_get(const PtrMap *m, const char *key)
{
    return map_find(m, key, true);
}
