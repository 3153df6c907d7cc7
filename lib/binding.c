/* What bindings need to check their view of the API against the library
 * they loaded: the size of each public struct they lay out themselves, and
 * the VRAM limit's flag and help text, so a binding's argparse option says
 * exactly what the CLI's --help says. */
#include "internal.h"

#include <string.h>

const char *batchfit_vram_limit_flag(void)
{
    return BATCHFIT_VRAM_LIMIT_GB_FLAG;
}

const char *batchfit_vram_limit_help(void)
{
    return BATCHFIT_VRAM_LIMIT_GB_HELP;
}

#define SIZE_ENTRY(type) {#type, sizeof(type)}

size_t batchfit_sizeof(const char *type_name)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        SIZE_ENTRY(batchfit_options),         SIZE_ENTRY(batchfit_step),
        SIZE_ENTRY(batchfit_step_report),     SIZE_ENTRY(batchfit_command_options),
        SIZE_ENTRY(batchfit_fit),             SIZE_ENTRY(batchfit_recover_options),
        SIZE_ENTRY(batchfit_recover_plan),    SIZE_ENTRY(batchfit_trial),
    };
    for (size_t i = 0; type_name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(sizes[i].name, type_name) == 0)
            return sizes[i].size;
    return 0;
}
