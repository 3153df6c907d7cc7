#include "test.h"

#include "internal.h"

TEST(curve_fits_a_line_exactly)
{
    double x[] = {1, 10, 100};
    double y[3];
    for (int i = 0; i < 3; i++)
        y[i] = 1000.0 + 25.0 * x[i];
    batchfit_fit f;
    batchfit__fit_line(x, y, 3, &f);
    CHECK(f.valid);
    CHECK_EQ(f.points, 3);
    CHECK_NEAR(f.intercept_bytes, 1000.0, 1e-6);
    CHECK_NEAR(f.bytes_per_sample, 25.0, 1e-9);
    CHECK_NEAR(f.max_residual_bytes, 0.0, 1e-6);
}

TEST(curve_residual_measures_a_bend)
{
    double x[] = {0, 1, 2};
    double y[] = {0, 0, 3};
    batchfit_fit f;
    batchfit__fit_line(x, y, 3, &f);
    CHECK(f.valid);
    CHECK_NEAR(f.bytes_per_sample, 1.5, 1e-12);
    CHECK_NEAR(f.intercept_bytes, -0.5, 1e-12);
    CHECK_NEAR(f.max_residual_bytes, 1.0, 1e-12);
}

TEST(curve_degenerate_inputs)
{
    batchfit_fit f;
    batchfit__fit_line(NULL, NULL, 0, &f);
    CHECK(!f.valid);
    double x[] = {5, 5};
    double y[] = {1, 2};
    batchfit__fit_line(x, y, 2, &f);
    CHECK(!f.valid);
    CHECK_EQ(f.points, 2);
}
