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
    /* The CUDA runtime and driver, and HIP's, as C and C++ trainers print
     * their error codes (cudaGetErrorName), and calls that failed by name. */
    {"CUDA runtime allocation failure",
     "cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|(^|[^A-Za-z_])cu(da)?(Mem)?(Malloc|Alloc)"
     "[A-Za-z0-9_]*(\\(\\))? failed",
     "train.cu:88: cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)"},
    {"HIP runtime allocation failure", "hipErrorOutOfMemory|hipErrorMemoryAllocation",
     "HIP error hipErrorOutOfMemory at train.hip:42"},
    /* PyTorch's other device backends (Intel XPU, Apple MPS), whose
     * "Tried to allocate" is device memory too. */
    {"PyTorch XPU / MPS",
     "(XPU|MPS backend) out of memory|(PI_ERROR|UR_RESULT_ERROR)_OUT_OF_(RESOURCES|DEVICE_MEMORY)",
     "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.56 GiB total "
     "capacity)"},
    {"out of device memory",
     "[Oo]ut of (GPU|device|video|VRAM) memory|OutOfGPUMemoryError|OUT_OF_DEVICE_MEMORY|"
     "OutOfDeviceMemory",
     "ERROR: Out of GPU memory trying to allocate 2.000 GiB"},
    {"JAX / XLA", "RESOURCE_EXHAUSTED: (Out of memory|Failed to allocate)",
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
    /* The JVM's and Julia's exception: its message follows the name
     * (": Java heap space", "()"), or the JVM's "thrown from"; a name that
     * ends the line is one mentioned ("registered handler for
     * java.lang.OutOfMemoryError"). */
    {"JVM / Julia OutOfMemoryError", "(^|[^A-Za-z_])OutOfMemoryError(:|\\(| thrown from)",
     "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space"},
    {"C++ allocation failure", "std::bad_alloc",
     "terminate called after throwing an instance of 'std::bad_alloc'"},
    {"C library ENOMEM", "Cannot allocate memory", "mmap: Cannot allocate memory"},
    /* Plain C and C-like trainers that check their allocations (llm.c's
     * mallocCheck, ggml, Rust's default handler, git-style xmalloc). Each
     * row names an allocation that failed, not memory in general, so log
     * lines about memory use do not match (tests/test_oom.c has both). */
    {"C allocation failure", "[Mm]emory allocation (of size [0-9]+ )?failed",
     "Error: Memory allocation failed at train_gpt2.c:690"},
    {"C allocation failure (failed to allocate)",
     "[Ff]ailed to allocate ([0-9][0-9.,]* ?([KMGTkmgt]i?[Bb]|bytes?)|((host|device|CPU|GPU|"
     "pinned) )?memory|(a |the )?([A-Za-z0-9_]+ )?buffers?\\b)",
     "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 4294967296"},
    {"C allocation failure (malloc failed)",
     "(^|[^A-Za-z_])(malloc|calloc|realloc|aligned_alloc|posix_memalign)(\\(\\))? failed",
     "fatal: malloc failed (tried to allocate 1073741824 bytes)"},
    {"Rust allocation failure", "allocation of [0-9]+ bytes failed",
     "memory allocation of 4294967296 bytes failed"},
    {"out of host memory", "[Oo]ut of host memory|OUT_OF_HOST_MEMORY",
     "Error: out of host memory while pinning the batch buffer"},
    /* A DataLoader worker's batch that /dev/shm cannot hold (Docker's 64
     * MiB by default): a limit that grows with the batch, as memory does. */
    {"PyTorch DataLoader shared memory",
     "insufficient shared memory \\(shm\\)|workers are out of shared memory",
     "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
     "shared memory (shm)."},
    /* ggml's context arena, sized at start and outgrown by a batch. */
    {"ggml context pool", "not enough space in the context's memory pool",
     "ggml_new_object: not enough space in the context's memory pool (needed 819200, available "
     "524288)"},
    /* Only where it reports a shortfall: at the clause's end, or for or
     * to something ("not enough memory samples yet", "insufficient memory
     * bandwidth" say nothing of one). */
    {"not enough memory",
     "([Nn]ot enough|[Ii]nsufficient) (free |device |host |GPU |system )?memory"
     "([.,:;!)]|[[:space:]]*$| (for|to|on|in|left|available)\\b)",
     "error: not enough memory for the activations of 512 samples"},
    /* A worker killed by SIGKILL: the out-of-memory killer's signal (a
     * DataLoader's workers each hold a copy of the batch in flight). */
    {"PyTorch DataLoader worker killed",
     "DataLoader worker \\(pids?\\(?s?\\)? ?[0-9, ]+\\)? is killed by signal: Killed",
     "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed."},
    {"TensorRT", "Error Code [0-9]+: OutOfMemory",
     "[TRT] [E] 2: [allocator.cpp::allocate::20] Error Code 2: OutOfMemory (no further "
     "information)"},
    {"generic out-of-memory message", "[Oo]ut of memory", "[CUDA ERROR] train.cu:42: out of memory"},
};

/* Rows whose failure is in an accelerator's memory: the bytes their
 * message says were asked for are device bytes, not the host's; and rows
 * whose failure is in the host's, whose bytes are not a GPU's. */
static const char *const device_rows[] = {
    "PyTorch CUDA allocator", "PyTorch OutOfMemoryError", "PyTorch, older",
    "PyTorch, raw CUDA call", "PyTorch on ROCm", "cuBLAS", "cuDNN", "cuDNN under memory pressure",
    "CUDA runtime allocation failure", "HIP runtime allocation failure", "PyTorch XPU / MPS",
    "out of device memory", "TensorRT",
};

static const char *const host_rows[] = {
    "PyTorch CPU allocator", "Python MemoryError", "NumPy MemoryError", "C++ allocation failure",
    "C library ENOMEM", "C allocation failure (malloc failed)", "Rust allocation failure",
    "out of host memory", "PyTorch DataLoader shared memory", "JVM / Julia OutOfMemoryError",
    "ggml context pool", "PyTorch DataLoader worker killed",
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
        /* Without REG_NOSUB: where the match lies decides whether it is one
         * (names_without_reporting). */
        if (regcomp(&t->compiled[i], builtin_rows[i].pattern, REG_EXTENDED) != 0) {
            batchfit__oom_table_free(t);
            return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY,
                                  "could not compile the built-in OOM pattern \"%s\"",
                                  builtin_rows[i].pattern);
        }
        snprintf(t->sources[i], sizeof t->sources[i], "%s", builtin_rows[i].source);
        t->count++;
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
    /* A pattern that matches an empty line matches every line ("", "x*",
     * "^": every trial that printed anything would read as out of memory), or
     * at least every blank line ("^$"), which progress output is full of. */
    if (regexec(&table->compiled[table->count], "", 0, NULL, 0) == 0) {
        regfree(&table->compiled[table->count]);
        return batchfit__fail(table->ctx, BATCHFIT_E_PARSE,
                              "--oom-pattern: \"%s\" matches an empty line (so every blank "
                              "line, or every line where it is not anchored): give text an "
                              "out-of-memory message contains",
                              regex);
    }
    snprintf(table->sources[table->count], sizeof table->sources[table->count],
             "user pattern \"%.70s\"", regex);
    table->count++;
    return BATCHFIT_OK;
}

/* Words one of which every built-in row's match contains, in any case,
 * and words of failure one of which every such match contains too: a line
 * without both is matched against the user's rows only. A trainer's
 * output is mostly progress lines, and running some thirty expressions
 * over each held a program printing 120 MiB to 5.5 s of batchfit's CPU,
 * the program blocked on the pipe meanwhile; progress lines that name
 * memory ("step 10 | mem alloc 1.9 GiB") cost 7 s a trial of 113 MB.
 * oom_every_builtin_row_matches_its_example keeps these lists whole. */
static const char *const builtin_words[] = {"memory", "alloc", "memalign", "exhausted",
                                            "cudnn_status", "killed by signal: killed",
                                            "out_of_resources"};
static const char *const failure_words[] = {"out of", "out_of", "outof", "error", "fail",
                                            "exhaust", "not enough", "insufficient", "cannot",
                                            "can't", "bad_alloc", "oom", "killed",
                                            "cudnn_status"};

static int names_one_of(const char *line, const char *const *words, size_t count)
{
    for (const char *c = line; *c; c++) {
        char lower = (char)tolower((unsigned char)*c);
        for (size_t w = 0; w < count; w++)
            if (words[w][0] == lower && strncasecmp(c, words[w], strlen(words[w])) == 0)
                return 1;
    }
    return 0;
}

static int names_a_builtin_word(const char *line)
{
    return names_one_of(line, builtin_words, sizeof builtin_words / sizeof builtin_words[0]) &&
           names_one_of(line, failure_words, sizeof failure_words / sizeof failure_words[0]);
}

/* Whether word (len bytes) is one of words, in any case. */
static int one_of(const char *word, size_t len, const char *const *words, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(words[i]) == len && strncasecmp(word, words[i], len) == 0)
            return 1;
    return 0;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '\'' || c == '/';
}

/* Words that, among the four before a built-in row's match in its clause
 * (back to punctuation that is not part of a word), make the line one that
 * names the failure without reporting it: a negation ("Epoch 1: no out of
 * memory errors so far"), a condition ("Tip: if you run out of memory,
 * try --gradient-checkpointing", "in case of out of memory the trainer
 * retries"), or advice, with the stems' usual endings ("set
 * PYTORCH_CUDA_ALLOC_CONF to avoid fragmentation and out of memory", "to
 * lower the risk of out of memory", "retries after an out of memory
 * error", a help text's; each printed by a run that finished read as one
 * that ran out of memory, exit 3). */
static const char *const negations[] = {"no", "not", "never", "without", "zero", "if", "unless"};
static const char *const advice_stems[] = {"avoid", "prevent", "reduc",   "mitigat",
                                           "handl", "lower",   "minimiz", "minimis", "risk"};
static const char *const advice_endings[] = {"", "e", "es", "ed", "ing", "s"};
/* Two words that say it only together, the first before the second: "in
 * case of out of memory", "to limit out of memory"; alone they report one
 * ("Test case 3 out of memory", "exceeded its memory limit and ran out of
 * memory"). Retrying is no advice either: "retrying after CUDA out of
 * memory, giving up" reports one. */
static const char *const phrases[][2] = {{"in", "case"}, {"to", "limit"}};
/* Values after the match's colon or equals sign that say nothing failed
 * ("Checked for MemoryError: none", "malloc failed: 0 times"). */
static const char *const nothing[] = {"none", "0", "false", "no", "never", "n/a", "nil", "null"};

static int advice_word(const char *word, size_t len)
{
    for (size_t i = 0; i < sizeof advice_stems / sizeof advice_stems[0]; i++) {
        size_t stem = strlen(advice_stems[i]);
        if (len >= stem && strncasecmp(word, advice_stems[i], stem) == 0 &&
            one_of(word + stem, len - stem, advice_endings,
                   sizeof advice_endings / sizeof advice_endings[0]))
            return 1;
    }
    return 0;
}

/* Phrases after a match, in its clause, that say it is no failure. */
static const char *const harmless[] = {"not a failure", "not an error", "non-fatal",
                                       "can be ignored", "safe to ignore"};
/* TensorFlow's allocator says so in the sentence after ("ran out of
 * memory trying to allocate 2.26GiB ... The caller indicates that this is
 * not a failure") on runs that go on to finish. */
static const char *const harmless_line = "indicates that this is not a failure";

/* Where the clause holding byte at of line starts: after the last ';' or
 * sentence end (". ") before it. */
static size_t clause_start(const char *line, size_t at)
{
    size_t from = at;
    while (from > 0 && line[from - 1] != ';' &&
           !(from >= 2 && line[from - 2] == '.' && line[from - 1] == ' '))
        from--;
    return from;
}

/* Whether the word at line + at (len bytes) stands alone: no letter,
 * digit or underscore on either side. */
static int whole_word(const char *line, size_t at, size_t len)
{
    return (at == 0 || !(isalnum((unsigned char)line[at - 1]) || line[at - 1] == '_')) &&
           !(isalnum((unsigned char)line[at + len]) || line[at + len] == '_');
}

/* Whether line, in the clause before byte so, marks a warning: a Python
 * warning's category ("conv.py:456: UserWarning: Plan failed with a
 * cudnnException ... CUDNN_STATUS_NOT_SUPPORTED"), a logger's level
 * ("WARNING:", "[WARNING]", "- WARNING -", "warning:" as llama.cpp prints
 * "warning: failed to mlock ...: Cannot allocate memory", "WARN  [main]",
 * TensorRT's "[W]"), or glog's ("W1204 12:00:00", TensorFlow's
 * "W tensorflow/..."). A warning is printed and the run goes on; a
 * failure is an error, printed as one. */
static int in_a_warning(const char *line, size_t so)
{
    size_t from = clause_start(line, so);
    if (from == 0 && line[0] == 'W' && isdigit((unsigned char)line[1]) &&
        isdigit((unsigned char)line[2]) && isdigit((unsigned char)line[3]) &&
        isdigit((unsigned char)line[4]) && line[5] == ' ')
        return 1;
    for (size_t at = from; at < so; at++) {
        const char *c = line + at;
        if (strncmp(c, "Warning:", 8) == 0 && at > 0 && isalpha((unsigned char)c[-1]))
            return 1;
        if (strncmp(c, "[W]", 3) == 0)
            return 1;
        if (c[0] == 'W' && c[1] == ' ' && (at == 0 || (at >= 2 && c[-1] == ' ' && c[-2] == ':')))
            return 1;
        size_t len = strncasecmp(c, "warning", 7) == 0 ? 7 : strncasecmp(c, "warn", 4) == 0 ? 4 : 0;
        if (!len || !whole_word(line, at, len))
            continue;
        const char *after = c + len;
        if (*after == ':' || *after == ']' || strncmp(after, " -", 2) == 0 ||
            strncmp(after, " |", 2) == 0 || strncmp(after, "  ", 2) == 0 ||
            strncmp(after, " [", 2) == 0)
            return 1;
    }
    return 0;
}

/* Whether the clause after the match (to its ';' or sentence end) says it
 * is harmless, or the line says so as TensorFlow's allocator does. */
static int says_harmless(const char *line, size_t eo)
{
    if (strstr(line + eo, harmless_line))
        return 1;
    for (const char *c = line + eo; *c && *c != ';' && !(c[0] == '.' && c[1] == ' '); c++)
        for (size_t i = 0; i < sizeof harmless / sizeof harmless[0]; i++)
            if (strncasecmp(c, harmless[i], strlen(harmless[i])) == 0)
                return 1;
    return 0;
}

/* Whether the built-in match [so, eo) of line only names an out-of-memory
 * failure: preceded in its clause by a negation or advice, inside a Python
 * warning, part of a compound ("std::bad_alloc-safe allocator"), followed
 * by a value that says none happened, or by words that say it is harmless. */
static int names_without_reporting(const char *line, size_t so, size_t eo)
{
    if (in_a_warning(line, so) || says_harmless(line, eo))
        return 1;
    size_t at = so, later_at = 0, later_len = 0;
    for (unsigned words = 0; words < 4;) {
        while (at > 0 && (line[at - 1] == ' ' || line[at - 1] == '\t'))
            at--;
        size_t end = at;
        while (at > 0 && word_char(line[at - 1]))
            at--;
        if (at == end)
            break;
        if (one_of(line + at, end - at, negations, sizeof negations / sizeof negations[0]) ||
            advice_word(line + at, end - at))
            return 1;
        for (size_t i = 0; later_len && i < sizeof phrases / sizeof phrases[0]; i++)
            if (one_of(line + at, end - at, &phrases[i][0], 1) &&
                one_of(line + later_at, later_len, &phrases[i][1], 1))
                return 1;
        later_at = at;
        later_len = end - at;
        words++;
    }
    const char *p = line + eo;
    if (p[0] == '-' && isalnum((unsigned char)p[1]))
        return 1;
    int separated = eo > so && (line[eo - 1] == ':' || line[eo - 1] == '=');
    while (*p == ' ' || *p == '\t')
        p++;
    if (!separated && (*p == ':' || *p == '=')) {
        separated = 1;
        for (p++; *p == ' ' || *p == '\t'; p++)
            ;
    }
    size_t len = 0;
    while (p[len] && (isalnum((unsigned char)p[len]) || p[len] == '/'))
        len++;
    /* The value is all the clause says: "none", "0 times", "0 so far"; not
     * "none available", "none of the devices had room". */
    const char *rest = p + len;
    int alone = !*rest || strchr(",;.)", *rest) || strncmp(rest, " time", 5) == 0 ||
                strncmp(rest, " so far", 7) == 0;
    return alone && (separated || (len == 1 && p[0] == '0')) &&
           one_of(p, len, nothing, sizeof nothing / sizeof nothing[0]);
}

const char *batchfit__oom_match(const batchfit__oom_table *table, const char *line)
{
    return batchfit__oom_match_at(table, line, NULL);
}

const char *batchfit__oom_match_at(const batchfit__oom_table *table, const char *line,
                                   size_t *at)
{
    if (at)
        *at = 0;
    if (!table || !line)
        return NULL;
    size_t first = names_a_builtin_word(line) ? 0 : BUILTIN_COUNT;
    for (size_t i = first; i < table->count; i++) {
        regmatch_t m[1];
        if (regexec(&table->compiled[i], line, 1, m, 0) != 0)
            continue;
        if (i < BUILTIN_COUNT && names_without_reporting(line, (size_t)m[0].rm_so, (size_t)m[0].rm_eo))
            continue;
        if (at && i < BUILTIN_COUNT)
            *at = (size_t)m[0].rm_so;
        return table->sources[i];
    }
    return NULL;
}

int batchfit_oom_text(batchfit_ctx *ctx, const char *text, int *matched, char *source,
                      size_t source_len)
{
    if (matched)
        *matched = 0;
    if (source && source_len)
        source[0] = '\0';
    if (!ctx || !text || !matched)
        return ctx ? batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                    "batchfit_oom_text: %s is NULL", !text ? "text" : "matched")
                   : BATCHFIT_E_INVALID_ARGUMENT;
    batchfit__oom_table *table;
    int rc = batchfit__oom_table_create(ctx, &table);
    if (rc != BATCHFIT_OK)
        return rc;
    int failed = 0;
    for (const char *p = text; *p && !*matched && !failed;) {
        size_t len = strcspn(p, "\n");
        /* Each line on its own, as a child's output is read. */
        batchfit__buf line;
        batchfit__buf_init(&line, &ctx->allocator);
        batchfit__buf_append(&line, p, len);
        const char *one = batchfit__buf_text(&line);
        const char *what = one ? batchfit__oom_match(table, one) : NULL;
        failed = !one;
        if (what) {
            *matched = 1;
            if (source && source_len)
                batchfit__copy(source, source_len, what);
        }
        batchfit__buf_free(&line);
        p += len + (p[len] == '\n');
    }
    batchfit__oom_table_free(table);
    if (failed)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY,
                              "out of memory reading a message for out-of-memory signatures");
    return BATCHFIT_OK;
}
