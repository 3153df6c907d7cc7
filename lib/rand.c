/* splitmix64 (Steele, Lea and Flood 2014): a small, well-mixed generator,
 * so a seed reproduces a run. */
#include "internal.h"

uint64_t batchfit__splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
