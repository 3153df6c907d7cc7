/* The lattice of allowed batch sizes: every integer, multiples of N, or
 * powers of two plus one extra candidate (the requested maximum). The search
 * works on lattice indices, so no strategy can propose a size off it. */
#include "internal.h"

static uint64_t pow2_floor(uint64_t x)
{
    uint64_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return x ? p : 0;
}

uint64_t batchfit__lattice_ceil(batchfit_lattice_kind kind, uint64_t multiple, uint64_t extra,
                                uint64_t x)
{
    if (x == 0)
        x = 1;
    switch (kind) {
    case BATCHFIT_LATTICE_MULTIPLE: {
        uint64_t k = x / multiple + (x % multiple != 0);
        if (k > UINT64_MAX / multiple)
            return 0;
        return k * multiple;
    }
    case BATCHFIT_LATTICE_POW2: {
        uint64_t p = pow2_floor(x);
        if (p != x) {
            if (p > UINT64_MAX / 2)
                p = 0;
            else
                p *= 2;
        }
        if (extra >= x && (p == 0 || extra < p))
            return extra;
        return p;
    }
    case BATCHFIT_LATTICE_EVERY:
        break;
    }
    return x;
}

uint64_t batchfit__lattice_floor(batchfit_lattice_kind kind, uint64_t multiple, uint64_t extra,
                                 uint64_t x)
{
    switch (kind) {
    case BATCHFIT_LATTICE_MULTIPLE:
        return x / multiple * multiple;
    case BATCHFIT_LATTICE_POW2: {
        uint64_t p = pow2_floor(x);
        if (extra && extra <= x && extra > p)
            return extra;
        return p;
    }
    case BATCHFIT_LATTICE_EVERY:
        break;
    }
    return x;
}

void batchfit__lattice_init(batchfit_lattice *l, batchfit_lattice_kind kind, uint64_t multiple,
                            uint64_t extra, uint64_t min, uint64_t bound)
{
    l->kind = kind;
    l->step = kind == BATCHFIT_LATTICE_MULTIPLE ? multiple : 1;
    l->first = min;
    l->count = 0;
    if (kind != BATCHFIT_LATTICE_POW2) {
        l->count = bound >= min ? (bound - min) / l->step + 1 : 0;
        return;
    }
    for (uint64_t p = 1;; p *= 2) {
        if (extra && extra > (l->count ? l->points[l->count - 1] : 0) && extra < p &&
            extra >= min && extra <= bound)
            l->points[l->count++] = extra;
        if (p >= min && p <= bound)
            l->points[l->count++] = p;
        if (p > bound || p > UINT64_MAX / 2) {
            if (extra && extra > p && extra >= min && extra <= bound)
                l->points[l->count++] = extra;
            break;
        }
    }
}

uint64_t batchfit__lattice_value(const batchfit_lattice *l, uint64_t index)
{
    if (l->kind == BATCHFIT_LATTICE_POW2)
        return l->points[index];
    return l->first + index * l->step;
}

int64_t batchfit__lattice_index_floor(const batchfit_lattice *l, uint64_t x)
{
    if (l->count == 0 || x < batchfit__lattice_value(l, 0))
        return -1;
    if (l->kind != BATCHFIT_LATTICE_POW2) {
        uint64_t i = (x - l->first) / l->step;
        return (int64_t)(i < l->count ? i : l->count - 1);
    }
    int64_t i = (int64_t)l->count - 1;
    while (i > 0 && l->points[i] > x)
        i--;
    return i;
}
