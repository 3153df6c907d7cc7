/* Replays every fuzz corpus through its target, so `make test` (and the
 * sanitizer builds in CI) run what libFuzzer found without libFuzzer. */
#include "test.h"

#include "../fuzz/fuzz.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

static int replay(const char *name, int (*target)(const uint8_t *, size_t))
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", test_source_dir(), name);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        static uint8_t buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        target(buf, n);
        files++;
    }
    closedir(d);
    return files;
}

TEST(fuzz_corpora_replay_cleanly)
{
    CHECK(replay("parse", fuzz_parse) >= 8);
    CHECK(replay("template", fuzz_template) >= 4);
    CHECK(replay("json", fuzz_json) >= 5);
    CHECK(replay("sim_spec", fuzz_sim_spec) >= 4);
    CHECK(replay("cache", fuzz_cache) >= 4);
    CHECK(replay("result", fuzz_result) >= 4);
    CHECK(replay("search", fuzz_search) >= 8);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/batchfit-fuzz-cache-%ld", (long)getpid());
    rmdir(dir);
}
