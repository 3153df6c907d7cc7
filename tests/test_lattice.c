#include "test.h"

#include "internal.h"

TEST(lattice_ceil_and_floor)
{
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_EVERY, 1, 0, 0), 1);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_EVERY, 1, 0, 7), 7);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_MULTIPLE, 8, 0, 2), 8);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_MULTIPLE, 8, 0, 16), 16);
    CHECK_EQ(batchfit__lattice_floor(BATCHFIT_LATTICE_MULTIPLE, 8, 0, 23), 16);
    CHECK_EQ(batchfit__lattice_floor(BATCHFIT_LATTICE_MULTIPLE, 8, 0, 7), 0);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_POW2, 1, 0, 3), 4);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_POW2, 1, 0, 4), 4);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_POW2, 1, 300, 257), 300);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_POW2, 1, 300, 301), 512);
    CHECK_EQ(batchfit__lattice_floor(BATCHFIT_LATTICE_POW2, 1, 300, 511), 300);
    CHECK_EQ(batchfit__lattice_floor(BATCHFIT_LATTICE_POW2, 1, 300, 299), 256);
    CHECK_EQ(batchfit__lattice_floor(BATCHFIT_LATTICE_POW2, 1, 0, 0), 0);
    CHECK_EQ(batchfit__lattice_ceil(BATCHFIT_LATTICE_MULTIPLE, UINT64_MAX / 2, 0, UINT64_MAX), 0);
}

TEST(lattice_points_and_indices)
{
    batchfit_lattice l;
    batchfit__lattice_init(&l, BATCHFIT_LATTICE_EVERY, 1, 0, 2, 10);
    CHECK_EQ(l.count, 9);
    CHECK_EQ(batchfit__lattice_value(&l, 0), 2);
    CHECK_EQ(batchfit__lattice_value(&l, 8), 10);
    CHECK_EQ(batchfit__lattice_index_floor(&l, 1), -1);
    CHECK_EQ(batchfit__lattice_index_floor(&l, 5), 3);
    CHECK_EQ(batchfit__lattice_index_floor(&l, 1000), 8);

    batchfit__lattice_init(&l, BATCHFIT_LATTICE_MULTIPLE, 64, 0, 64, 256);
    CHECK_EQ(l.count, 4);
    CHECK_EQ(batchfit__lattice_value(&l, 3), 256);
    CHECK_EQ(batchfit__lattice_index_floor(&l, 200), 2);

    batchfit__lattice_init(&l, BATCHFIT_LATTICE_POW2, 1, 300, 1, 300);
    CHECK_EQ(l.count, 10); /* 1 2 4 ... 256, 300 */
    CHECK_EQ(batchfit__lattice_value(&l, 8), 256);
    CHECK_EQ(batchfit__lattice_value(&l, 9), 300);
    CHECK_EQ(batchfit__lattice_index_floor(&l, 299), 8);
    CHECK_EQ(batchfit__lattice_index_floor(&l, 300), 9);

    batchfit__lattice_init(&l, BATCHFIT_LATTICE_POW2, 1, 0, 4, 1024);
    CHECK_EQ(l.count, 9);
    CHECK_EQ(batchfit__lattice_value(&l, 0), 4);
    for (uint64_t i = 1; i < l.count; i++)
        CHECK(batchfit__lattice_value(&l, i) == 2 * batchfit__lattice_value(&l, i - 1));

    batchfit__lattice_init(&l, BATCHFIT_LATTICE_POW2, 1, 0, 1, UINT64_C(1) << 62);
    CHECK_EQ(l.count, 63);
}
