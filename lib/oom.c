/* Out-of-memory signatures: a table of regular expressions, kept as data,
 * matched against each line a child prints. The built-in rows come from
 * shared/reference/gpu-and-oom.md; users add their own with --oom-pattern. */
#include "internal.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct oom_row {
    const char *source;
    const char *pattern;
    const char *example;
} oom_row;

static const oom_row builtin_rows[] = {
    {"PyTorch CUDA allocator", "CUDA out of memory",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
    {"PyTorch OutOfMemoryError", "(torch\\.|torch\\.cuda\\.)OutOfMemoryError(:|\\(|[[:space:]]*$)",
     "torch.cuda.OutOfMemoryError: CUDA error"},
    {"PyTorch, older", "cuda runtime error \\(2\\) : out of memory",
     "RuntimeError: cuda runtime error (2) : out of memory at THCStorage.cu:66"},
    {"PyTorch, raw CUDA call", "CUDA error: out of memory",
     "RuntimeError: CUDA error: out of memory"},
    {"PyTorch on ROCm", "HIP out of memory", "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 20.00 MiB"},
    /* "can't allocate memory" up to PyTorch 1.x, "not enough memory" since. */
    {"PyTorch CPU allocator", "DefaultCPUAllocator: (can't allocate|not enough) memory",
     "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough "
     "memory: you tried to allocate 4294967296 bytes."},
    {"cuBLAS", "CUBLAS_STATUS_ALLOC_FAILED",
     "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"},
    {"cuDNN", "CUDNN_STATUS_(ALLOC_FAILED|INTERNAL_ERROR_(HOST|DEVICE)_ALLOCATION_FAILED)",
     "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"},
    {"cuDNN under memory pressure", "CUDNN_STATUS_NOT_SUPPORTED",
     "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed "
     "in a non-contiguous input."},
    {"JAX / XLA", "RESOURCE_EXHAUSTED: Out of memory",
     "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
     "allocate 1073741824 bytes."},
    {"TensorFlow", "ResourceExhaustedError|OOM when allocating tensor",
     "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
     "with shape[4096,4096]"},
    /* An exception's name ends the line or comes before its message: a
     * line that only names it ("no MemoryError seen", "OutOfMemoryError
     * handler installed") is not one raised. */
    {"Python MemoryError", "(^|[^A-Za-z_])MemoryError(:|\\(|[[:space:]]*$)",
     "MemoryError: Unable to allocate 8.00 GiB"},
    /* NumPy's subclass of MemoryError: its name does not end the word. */
    {"NumPy MemoryError", "_ArrayMemoryError\\b",
     "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 24.0 GiB for an array with "
     "shape (524288, 6144) and data type float64"},
    {"C++ allocation failure", "std::bad_alloc",
     "terminate called after throwing an instance of 'std::bad_alloc'"},
    {"C library ENOMEM", "Cannot allocate memory", "mmap: Cannot allocate memory"},
    /* Plain C and C-like trainers that check their allocations (llm.c's
     * mallocCheck, ggml, Rust's default handler, git-style xmalloc). Each
     * row names an allocation that failed, not memory in general, so log
     * lines about memory use do not match (tests/test_oom.c has both). */
    {"C allocation failure", "[Mm]emory allocation failed",
     "Error: Memory allocation failed at train_gpt2.c:690"},
    {"C allocation failure (failed to allocate)",
     "[Ff]ailed to allocate ([0-9][0-9.,]* ?([KMGTkmgt]i?[Bb]|bytes?)|((host|device|CPU|GPU|"
     "pinned) )?memory|(a |the )?buffer)",
     "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 4294967296"},
    {"C allocation failure (malloc failed)",
     "(^|[^A-Za-z_])(malloc|calloc|realloc|aligned_alloc|posix_memalign)(\\(\\))? failed",
     "fatal: malloc failed (tried to allocate 1073741824 bytes)"},
    {"Rust allocation failure", "allocation of [0-9]+ bytes failed",
     "memory allocation of 4294967296 bytes failed"},
    {"out of host memory", "[Oo]ut of host memory|OUT_OF_HOST_MEMORY",
     "Error: out of host memory while pinning the batch buffer"},
    {"generic out-of-memory message", "[Oo]ut of memory", "[CUDA ERROR] train.cu:42: out of memory"},
};

/* Lines a row matches that are advice about the failure, not the failure:
 * "set PYTORCH_CUDA_ALLOC_CONF=... to avoid out of memory errors" in a log
 * is none. Keyed by the row's source. */
static const oom_row builtin_advice[] = {
    {"generic out-of-memory message",
     "([Aa]void|[Pp]revent|[Rr]educ|[Mm]itigat|[Hh]andl)(e|es|ed|ing)?( [A-Za-z-]+)? [Oo]ut of "
     "memory",
     "INFO: tip: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid out of memory "
     "errors"},
};

/* Rows whose failure is in an accelerator's memory: the bytes their
 * message says were asked for are device bytes, not the host's; and rows
 * whose failure is in the host's, whose bytes are not a GPU's. */
static const char *const device_rows[] = {
    "PyTorch CUDA allocator", "PyTorch OutOfMemoryError", "PyTorch, older",
    "PyTorch, raw CUDA call", "PyTorch on ROCm", "cuBLAS", "cuDNN", "cuDNN under memory pressure",
};

static const char *const host_rows[] = {
    "PyTorch CPU allocator", "Python MemoryError", "NumPy MemoryError", "C++ allocation failure",
    "C library ENOMEM", "C allocation failure (malloc failed)", "Rust allocation failure",
    "out of host memory",
};

static int named_in(const char *source, const char *const *rows, size_t count)
{
    for (size_t i = 0; source && i < count; i++)
        if (strcmp(source, rows[i]) == 0)
            return 1;
    return 0;
}

int batchfit__oom_on_device(const char *source)
{
    return named_in(source, device_rows, sizeof device_rows / sizeof device_rows[0]);
}

int batchfit__oom_on_host(const char *source)
{
    return named_in(source, host_rows, sizeof host_rows / sizeof host_rows[0]);
}

#define BUILTIN_COUNT (sizeof builtin_rows / sizeof builtin_rows[0])
#define USER_MAX 32

struct batchfit__oom_table_s {
    batchfit_ctx *ctx;
    regex_t compiled[BUILTIN_COUNT + USER_MAX];
    regex_t unless[BUILTIN_COUNT];
    int has_unless[BUILTIN_COUNT];
    char sources[BUILTIN_COUNT + USER_MAX][96];
    size_t count;
};

int batchfit__oom_builtin(size_t i, const char **source, const char **pattern, const char **example)
{
    if (i >= BUILTIN_COUNT)
        return 0;
    if (source)
        *source = builtin_rows[i].source;
    if (pattern)
        *pattern = builtin_rows[i].pattern;
    if (example)
        *example = builtin_rows[i].example;
    return 1;
}

void batchfit__oom_table_free(batchfit__oom_table *table)
{
    if (!table)
        return;
    for (size_t i = 0; i < table->count; i++)
        regfree(&table->compiled[i]);
    for (size_t i = 0; i < BUILTIN_COUNT; i++)
        if (table->has_unless[i])
            regfree(&table->unless[i]);
    batchfit__free(&table->ctx->allocator, table);
}

int batchfit__oom_table_create(batchfit_ctx *ctx, batchfit__oom_table **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    batchfit__oom_table *t = batchfit__calloc(&ctx->allocator, 1, sizeof *t);
    if (!t)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory creating the OOM table");
    t->ctx = ctx;
    for (size_t i = 0; i < BUILTIN_COUNT; i++) {
        if (regcomp(&t->compiled[i], builtin_rows[i].pattern, REG_EXTENDED | REG_NOSUB) != 0) {
            batchfit__oom_table_free(t);
            return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY,
                                  "could not compile the built-in OOM pattern \"%s\"",
                                  builtin_rows[i].pattern);
        }
        snprintf(t->sources[i], sizeof t->sources[i], "%s", builtin_rows[i].source);
        t->count++;
        for (size_t a = 0; a < sizeof builtin_advice / sizeof builtin_advice[0]; a++) {
            if (strcmp(builtin_advice[a].source, builtin_rows[i].source) != 0)
                continue;
            if (regcomp(&t->unless[i], builtin_advice[a].pattern, REG_EXTENDED | REG_NOSUB) != 0) {
                batchfit__oom_table_free(t);
                return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY,
                                      "could not compile the built-in OOM pattern \"%s\"",
                                      builtin_advice[a].pattern);
            }
            t->has_unless[i] = 1;
        }
    }
    *out = t;
    return BATCHFIT_OK;
}

int batchfit__oom_table_add(batchfit__oom_table *table, const char *regex)
{
    if (!table || !regex)
        return BATCHFIT_E_INVALID_ARGUMENT;
    if (table->count == BUILTIN_COUNT + USER_MAX)
        return batchfit__fail(table->ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "--oom-pattern: at most %d patterns", USER_MAX);
    int rc = regcomp(&table->compiled[table->count], regex, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[128];
        regerror(rc, &table->compiled[table->count], why, sizeof why);
        return batchfit__fail(table->ctx, BATCHFIT_E_PARSE,
                              "--oom-pattern: invalid regular expression \"%s\": %s", regex, why);
    }
    snprintf(table->sources[table->count], sizeof table->sources[table->count],
             "user pattern \"%.70s\"", regex);
    table->count++;
    return BATCHFIT_OK;
}

/* Words one of which every built-in row's match contains, in any case:
 * a line with none of them is matched against the user's rows only. A
 * trainer's output is mostly progress lines, and running some twenty
 * expressions over each held a program printing 120 MiB to 5.5 s of
 * batchfit's CPU, the program blocked on the pipe meanwhile.
 * oom_every_builtin_row_matches_its_example keeps this list whole. */
static const char *const builtin_words[] = {"memory", "alloc", "memalign", "exhausted",
                                            "cudnn_status"};

static int names_a_builtin_word(const char *line)
{
    for (const char *c = line; *c; c++) {
        char lower = (char)tolower((unsigned char)*c);
        if (lower != 'm' && lower != 'a' && lower != 'e' && lower != 'c')
            continue;
        for (size_t w = 0; w < sizeof builtin_words / sizeof builtin_words[0]; w++)
            if (builtin_words[w][0] == lower &&
                strncasecmp(c, builtin_words[w], strlen(builtin_words[w])) == 0)
                return 1;
    }
    return 0;
}

const char *batchfit__oom_match(const batchfit__oom_table *table, const char *line)
{
    if (!table || !line)
        return NULL;
    size_t first = names_a_builtin_word(line) ? 0 : BUILTIN_COUNT;
    for (size_t i = first; i < table->count; i++)
        if (regexec(&table->compiled[i], line, 0, NULL, 0) == 0 &&
            !(i < BUILTIN_COUNT && table->has_unless[i] &&
              regexec(&table->unless[i], line, 0, NULL, 0) == 0))
            return table->sources[i];
    return NULL;
}
