#include "test.h"

TEST(oom_every_builtin_row_matches_its_example)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__oom_table *t = NULL;
    CHECK_EQ(batchfit__oom_table_create(ctx, &t), BATCHFIT_OK);
    const char *source, *pattern, *example;
    size_t rows = 0;
    for (size_t i = 0; batchfit__oom_builtin(i, &source, &pattern, &example); i++) {
        rows++;
        const char *got = batchfit__oom_match(t, example);
        CHECK(got != NULL);
        /* The first matching row is the row itself or an earlier, more specific one. */
        size_t first = 0;
        const char *s2;
        while (batchfit__oom_builtin(first, &s2, NULL, NULL) && strcmp(s2, got) != 0)
            first++;
        CHECK(first <= i);
    }
    CHECK(rows >= 20);
    CHECK_STR(batchfit__oom_match(t, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"),
              "PyTorch CUDA allocator");
    CHECK_STR(batchfit__oom_match(t, "RESOURCE_EXHAUSTED: Out of memory while trying to allocate"),
              "JAX / XLA");
    /* NumPy's own exception (numpy 1.x and 2.x module paths). */
    CHECK_STR(batchfit__oom_match(t, "numpy.core._exceptions._ArrayMemoryError: Unable to allocate "
                                     "3.00 GiB for an array with shape (3, 1073741824)"),
              "NumPy MemoryError");
    CHECK_STR(batchfit__oom_match(t, "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 1.00 GiB"),
              "NumPy MemoryError");
    CHECK_STR(batchfit__oom_match(t, "trainer: out of memory allocating 4096 bytes for x"),
              "generic out-of-memory message");
    /* Each phrasing, beside its row's own example. */
    static const char *const phrasings[][2] = {
        /* PyTorch's CPU allocator, up to 1.x and since (a failing malloc
         * under --enforce-address-space says this). */
        {"RuntimeError: [enforce fail at alloc_cpu.cpp:83] data. DefaultCPUAllocator: can't "
         "allocate memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot "
         "allocate memory)",
         "PyTorch CPU allocator"},
        {"RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not "
         "enough memory: you tried to allocate 4294967296 bytes.",
         "PyTorch CPU allocator"},
        /* A bare re-raised MemoryError; an exception's repr, as Dask's
         * "Compute Failed" lines carry it. */
        {"MemoryError", "Python MemoryError"},
        {"Exception: \"MemoryError('Unable to allocate 8.00 GiB')\"", "Python MemoryError"},
        /* No word of the prefilter's but "memalign". */
        {"error: posix_memalign failed (12)", "C allocation failure (malloc failed)"},
        {"[rank1]: torch.OutOfMemoryError: CUDA error: out of memory", "PyTorch OutOfMemoryError"},
        /* Advice names the failure; the failure itself still matches beside it. */
        {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. If reserved "
         "but unallocated memory is large try setting "
         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
         "PyTorch CUDA allocator"},
        /* The plain-C family. */
        {"Error: Memory allocation failed at llmc/zero.cuh:120", "C allocation failure"},
        {"train: failed to allocate 536870912 bytes for activations",
         "C allocation failure (failed to allocate)"},
        {"Failed to allocate 2.00 GiB", "C allocation failure (failed to allocate)"},
        {"error: failed to allocate memory for the optimizer state",
         "C allocation failure (failed to allocate)"},
        {"calloc() failed", "C allocation failure (malloc failed)"},
        {"dataloader: realloc failed at 12 MiB", "C allocation failure (malloc failed)"},
        {"memory allocation of 24 bytes failed", "Rust allocation failure"},
        {"vkAllocateMemory: VK_ERROR_OUT_OF_HOST_MEMORY", "out of host memory"},
        {"ERROR: Unexpected bus error encountered in worker. This might be caused by "
         "insufficient shared memory (shm).",
         "PyTorch DataLoader shared memory"},
        {"RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
         "possible that dataloader's workers are out of shared memory. Please try to raise your "
         "shared memory limit.",
         "PyTorch DataLoader shared memory"},
        /* Words before the name that are neither negation nor advice, a
         * count that is not zero, a value that is not none. */
        {"GPU 0 out of memory while loading the checkpoint", "generic out-of-memory message"},
        {"worker 3 ran out of memory at step 1200", "generic out-of-memory message"},
        {"unhandled out of memory error in the data loader", "generic out-of-memory message"},
        {"fatal: malloc failed: out of memory", "C allocation failure (malloc failed)"},
        {"malloc failed 3 times, giving up", "C allocation failure (malloc failed)"},
        {"caught MemoryError: Unable to allocate 2.00 GiB, retrying with 16",
         "Python MemoryError"},
        {"terminate called after throwing an instance of 'std::bad_alloc'",
         "C++ allocation failure"},
        /* Wordings a reviewer's trainers printed that read as bugs (exit 4). */
        {"cudaErrorMemoryAllocation", "CUDA runtime allocation failure"},
        {"kernel.cu:12: cudaMalloc failed", "CUDA runtime allocation failure"},
        {"cuMemAlloc_v2() failed with CUDA_ERROR_OUT_OF_MEMORY", "CUDA runtime allocation failure"},
        {"error: cudaMallocManaged failed (2)", "CUDA runtime allocation failure"},
        {"hipMalloc: hipErrorOutOfMemory", "HIP runtime allocation failure"},
        {"RuntimeError: MPS backend out of memory (MPS allocated: 1.2 GB). Tried to allocate 256 MB",
         "PyTorch XPU / MPS"},
        {"vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY", "out of device memory"},
        {"ggml_new_object: not enough space in the context's memory pool (needed 1, available 0)",
         "ggml context pool"},
        {"fatal: not enough memory for 4096 samples", "not enough memory"},
        {"Insufficient memory to run the batch", "not enough memory"},
        {"Exception in thread \"main\" java.lang.OutOfMemoryError: GC overhead limit exceeded",
         "JVM / Julia OutOfMemoryError"},
        {"ERROR: LoadError: OutOfMemoryError()", "JVM / Julia OutOfMemoryError"},
        /* A second reviewer's misses (each read as a bug, exit 4). */
        {"Exception: java.lang.OutOfMemoryError thrown from the UncaughtExceptionHandler in "
         "thread \"main\"",
         "JVM / Julia OutOfMemoryError"},
        {"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request "
         "for 2.00GiB (2147483648B) on device ordinal 0",
         "JAX / XLA"},
        {"ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 4294967296",
         "C allocation failure (failed to allocate)"},
        {"llama_new_context_with_model: failed to allocate compute buffers",
         "C allocation failure (failed to allocate)"},
        {"ggml_vulkan: Device memory allocation of size 4294967296 failed.",
         "C allocation failure"},
        {"ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory", "out of device memory"},
        {"[TRT] [E] 2: [allocator.cpp::allocate::20] Error Code 2: OutOfMemory (no further "
         "information)",
         "TensorRT"},
        {"RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)",
         "PyTorch XPU / MPS"},
        {"UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "PyTorch XPU / MPS"},
        /* A value of none that is not all its clause says; a harmless
         * phrase or a warning in another clause. */
        {"Failed to allocate memory: none available", "C allocation failure (failed to allocate)"},
        {"Out of memory: none of the devices had room", "generic out-of-memory message"},
        {"malloc failed: none of the 3 retries worked", "C allocation failure (malloc failed)"},
        {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. Note: NaN checks are "
         "non-fatal",
         "PyTorch CUDA allocator"},
        {"x.py:3: RuntimeWarning: overflow encountered; torch.OutOfMemoryError: CUDA out of memory",
         "PyTorch CUDA allocator"},
        {"error: not enough memory", "not enough memory"},
        /* Conditions and advice in another clause, or after the match. */
        {"Error: out of memory. If this persists, lower --batch-size", "generic out-of-memory message"},
        {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB; retrying with 8",
         "PyTorch CUDA allocator"},
        {"step 40: limit reached: out of memory", "generic out-of-memory message"},
        /* A reviewer's: words that make advice only in a phrase, and
         * retrying, which reports a failure. */
        {"retry 2/3 CUDA out of memory. Tried to allocate 2.00 GiB", "PyTorch CUDA allocator"},
        {"[rank0]: retrying step after CUDA out of memory, giving up", "PyTorch CUDA allocator"},
        {"RuntimeError: after retries CUDA out of memory", "PyTorch CUDA allocator"},
        {"process exceeded its memory limit and ran out of memory", "generic out-of-memory message"},
        {"Test case 3 out of memory", "generic out-of-memory message"},
        {"insufficient device memory to run the batch", "not enough memory"},
    };
    for (size_t i = 0; i < sizeof phrasings / sizeof phrasings[0]; i++)
        CHECK_STR(batchfit__oom_match(t, phrasings[i][0]), phrasings[i][1]);
    batchfit__oom_table_free(t);
    batchfit_ctx_free(ctx);
}

TEST(oom_ordinary_lines_do_not_match)
{
    static const char *const lines[] = {
        "IndexError: list index out of range",
        "step 10 loss 0.5321",
        "GPU memory usage: 5.2 GiB of 80 GiB",
        "RuntimeError: Expected all tensors to be on the same device",
        "Segmentation fault (core dumped)",
        "MemoryErrorHandler installed",
        /* Lines that name an out-of-memory error without one being raised. */
        "AssertionError: loss is nan (no MemoryError seen)",
        "Warning: torch.cuda.OutOfMemoryError handler installed",
        ("INFO: tip: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid out of memory "
         "errors"),
        "hint: reduce the batch size to prevent out of memory crashes",
        "tip: reducing out of memory errors with activation checkpointing",
        /* A negation or advice a few words before the name, a compound, a
         * count or value of none after it (a reviewer's trainer logs: each
         * made a successful trial read as out of memory). */
        "Epoch 1: no out of memory errors so far",
        "INFO: set PYTORCH_CUDA_ALLOC_CONF to avoid fragmentation and out of memory",
        "finished without any out of memory errors",
        "Using std::bad_alloc-safe allocator",
        "Checked for MemoryError: none",
        "malloc failed: 0 times",
        "malloc failed 0 times",
        "stats: out of memory = 0, retries = 3",
        /* Lines that mention memory or allocation without one failing. */
        "memory allocation: 2.1 GiB reserved for the KV cache",
        "Memory allocated: 5.2 GiB, max allocated: 6.0 GiB",
        "failed to allocate port 8080 for the dashboard",
        "Failed to allocate a TTY",
        "malloc_trim failed to return pages",
        "host memory: 12.0 GiB free",
        "allocation of tensors finished in 3.2 s",
        "checking for malloc... yes",
        "xmalloc_stats: 1024 bytes in use",
        /* Warnings on runs that finish: TensorFlow's allocator, PyTorch's
         * cuDNN plan (exit 0 read as out of memory, exit 3). */
        ("2024-05-01 12:00:00.1: W tensorflow/core/common_runtime/bfc_allocator.cc:290] "
         "Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.26GiB with "
         "freed_by_count=0. The caller indicates that this is not a failure, but this may mean "
         "that there could be performance gains if more memory were available."),
        ("/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:456: UserWarning: Plan failed "
         "with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize "
         "Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED"),
        "train.py:3: ResourceWarning: not enough memory for the prefetch buffer, disabled",
        "Warning: torch.cuda.OutOfMemoryError handler installed",
        /* A second reviewer's: lines that are no failure, each of which
         * ended a probe with "the minimum does not fit" (exit 3). */
        "WARNING: not enough memory to enable cudnn benchmark, falling back to default algorithm",
        "INFO: not enough memory samples yet to estimate throughput",
        "[W] Insufficient memory bandwidth utilization: 42%",
        "llama_model_load: using mmap; insufficient memory? no, 12 GiB free",
        "Compile cache: not enough memory pressure to evict entries",
        ("warning: failed to mlock 1048576-byte buffer (after previously locking 0 bytes): Cannot "
         "allocate memory"),
        "registered handler for java.lang.OutOfMemoryError",
        "2024-05-01 12:00:00,123 - WARNING - CUDA out of memory, retrying with 16",
        "W1204 12:00:00.123456 1234 allocator.cc:42] out of memory in the pool; trimming",
        /* A third hostile user's: conditions and advice that a run which
         * finished printed (each read as out of memory at every size). */
        "Tip: if you run out of memory, try --gradient-checkpointing",
        "If you get CUDA out of memory, lower --batch-size",
        "Set max_split_size_mb to limit out of memory due to fragmentation",
        "Enabling gradient checkpointing to lower the risk of out of memory",
        "Using 8-bit Adam to minimize out of memory errors",
        "in case of out of memory the trainer retries with half the batch",
        "",
    };
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__oom_table *t = NULL;
    CHECK_EQ(batchfit__oom_table_create(ctx, &t), BATCHFIT_OK);
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        CHECK(batchfit__oom_match(t, lines[i]) == NULL);
    CHECK(batchfit__oom_match(t, NULL) == NULL);
    batchfit__oom_table_free(t);
    batchfit_ctx_free(ctx);
}

TEST(oom_user_patterns)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__oom_table *t = NULL;
    CHECK_EQ(batchfit__oom_table_create(ctx, &t), BATCHFIT_OK);
    CHECK(batchfit__oom_match(t, "my framework: arena exhausted (42)") == NULL);
    CHECK_EQ(batchfit__oom_table_add(t, "arena exhausted \\([0-9]+\\)"), BATCHFIT_OK);
    CHECK_STR(batchfit__oom_match(t, "my framework: arena exhausted (42)"),
              "user pattern \"arena exhausted \\([0-9]+\\)\"");
    /* A user's row is matched on every line, not only on those that name
     * one of the words the built-in rows need ("memory", "alloc", ...). */
    CHECK(batchfit__oom_match(t, "E1234: kaboom at step 7") == NULL);
    CHECK_EQ(batchfit__oom_table_add(t, "kaboom"), BATCHFIT_OK);
    CHECK_STR(batchfit__oom_match(t, "E1234: kaboom at step 7"), "user pattern \"kaboom\"");
    /* The words are found in any case and anywhere on the line. */
    CHECK_STR(batchfit__oom_match(t, "x CUDNN_STATUS_ALLOC_FAILED"), "cuDNN");
    CHECK_STR(batchfit__oom_match(t, "Out of memory"), "generic out-of-memory message");
    CHECK_EQ(batchfit__oom_table_add(t, "unbalanced (paren"), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "--oom-pattern");
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "\"unbalanced (paren\"");
    batchfit__oom_table_free(t);
    batchfit__oom_table_free(NULL);
    batchfit_ctx_free(ctx);
}

/* The public reading of a message (the Python package's, for a step's
 * exception): each line against the built-in rows, as a child's output. */
TEST(oom_text_reads_each_line_by_the_builtin_rows)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    char source[96];
    int matched = -1;
    CHECK_EQ(batchfit_oom_text(ctx, "epoch 1\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
                               &matched, source, sizeof source),
             BATCHFIT_OK);
    CHECK_EQ(matched, 1);
    CHECK_STR(source, "PyTorch CUDA allocator");
    CHECK_EQ(batchfit_oom_text(ctx, "DefaultCPUAllocator: not enough memory: you tried to allocate 64 bytes",
                               &matched, source, sizeof source),
             BATCHFIT_OK);
    CHECK_EQ(matched, 1);
    CHECK_STR(source, "PyTorch CPU allocator");
    /* A short buffer is cut, never overrun; NULL takes no name. */
    char small[8];
    CHECK_EQ(batchfit_oom_text(ctx, "std::bad_alloc", &matched, small, sizeof small), BATCHFIT_OK);
    CHECK_EQ(matched, 1);
    CHECK_STR(small, "C++ all");
    CHECK_EQ(batchfit_oom_text(ctx, "MPS backend out of memory", &matched, NULL, 0), BATCHFIT_OK);
    CHECK_EQ(matched, 1);
    strcpy(source, "stale");
    CHECK_EQ(batchfit_oom_text(ctx, "shape mismatch\nno out of memory errors\n\n", &matched, source,
                               sizeof source),
             BATCHFIT_OK);
    CHECK_EQ(matched, 0);
    CHECK_STR(source, "");
    CHECK_EQ(batchfit_oom_text(ctx, "", &matched, source, sizeof source), BATCHFIT_OK);
    CHECK_EQ(matched, 0);
    /* A bad argument is an error code, never taken for a match (it was 1,
     * the same as a match, with no detail), and it says which. */
    matched = -1;
    CHECK_EQ(batchfit_oom_text(ctx, NULL, &matched, source, sizeof source), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(matched, 0);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "text is NULL");
    CHECK_EQ(batchfit_oom_text(ctx, "out of memory", NULL, source, sizeof source),
             BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "matched is NULL");
    matched = -1;
    CHECK_EQ(batchfit_oom_text(NULL, "out of memory", &matched, source, sizeof source), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(matched, 0);
    batchfit_ctx_free(ctx);
}
