/*
 * Robust statistics for the fleet: the median and the median absolute deviation, which one odd
 * node cannot drag the way it drags a mean and a standard deviation.
 */
#include "fleet/fleet.h"

#include <math.h>
#include <stdlib.h>

/* MAD x 1.4826 estimates the standard deviation of normally distributed values. */
#define MAD_SCALE 1.4826

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double fleet_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void fleet_spread(double *v, size_t n, double *median, double *mad)
{
    *median = fleet_median(v, n);
    *mad = 0;
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = fabs(v[i] - *median);
    *mad = fleet_median(v, n) * MAD_SCALE;
}
