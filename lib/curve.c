/* Fitting peak memory against batch size: a least-squares line, with the
 * largest residual as a measure of how well a line explains the points. */
#include "internal.h"

#include <math.h>

void batchfit__fit_line(const double *x, const double *y, unsigned n, batchfit_fit *fit)
{
    *fit = (batchfit_fit){0};
    fit->points = n;
    if (n == 0)
        return;
    double mean_x = 0.0, mean_y = 0.0;
    for (unsigned i = 0; i < n; i++) {
        mean_x += x[i];
        mean_y += y[i];
    }
    mean_x /= n;
    mean_y /= n;
    double sxx = 0.0, sxy = 0.0;
    for (unsigned i = 0; i < n; i++) {
        sxx += (x[i] - mean_x) * (x[i] - mean_x);
        sxy += (x[i] - mean_x) * (y[i] - mean_y);
    }
    if (sxx <= 0.0)
        return;
    fit->valid = 1;
    fit->bytes_per_sample = sxy / sxx;
    fit->intercept_bytes = mean_y - fit->bytes_per_sample * mean_x;
    for (unsigned i = 0; i < n; i++) {
        double r = fabs(y[i] - (fit->intercept_bytes + fit->bytes_per_sample * x[i]));
        if (r > fit->max_residual_bytes)
            fit->max_residual_bytes = r;
    }
}

int batchfit__fit_explains(const batchfit_fit *fit, double batch, double peak, double spread,
                           double *miss)
{
    if (!fit->valid)
        return 0;
    double off = fabs(fit->intercept_bytes + fit->bytes_per_sample * batch - peak);
    if (miss)
        *miss = off;
    return off <= 0.01 * peak || off <= 2.0 * spread * peak + fit->max_residual_bytes;
}
