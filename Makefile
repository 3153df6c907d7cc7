# batchfit - top-level build. `make` builds the libraries, `make test` runs
# every test, `make demo` runs the main job. Honours CC, CFLAGS, LDFLAGS,
# PREFIX, DESTDIR, LIBDIR, INCLUDEDIR, BINDIR, MANDIR.
# SANITIZE=1 builds everything with AddressSanitizer and UBSan (use a
# separate BUILD directory, e.g. make test SANITIZE=1 BUILD=build/asan).

VERSION_MAJOR := 0
VERSION := 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
LDFLAGS ?=
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BUILD ?= build

WARNINGS := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wpointer-arith -Wformat=2
CPPFLAGS_ALL := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinclude $(CPPFLAGS)
SAN_FLAGS :=
ifeq ($(SANITIZE),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
ALL_CFLAGS := $(WARNINGS) $(CPPFLAGS_ALL) $(CFLAGS) $(SAN_FLAGS)
ALL_LDFLAGS := $(LDFLAGS) $(SAN_FLAGS)
LIBS := -lm -ldl

LIB_SRC := $(wildcard lib/*.c)
LIB_OBJ := $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
SONAME := libbatchfit.so.$(VERSION_MAJOR)
SHARED := $(BUILD)/libbatchfit.so.$(VERSION)
STATIC := $(BUILD)/libbatchfit.a

TEST_SRC := $(wildcard tests/test_*.c)
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_TARGETS := $(FUZZ_SRC:fuzz/fuzz_%.c=$(BUILD)/fuzz/%)
TEST_OBJ := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%.o) $(BUILD)/tests/support.o \
            $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%.o) $(BUILD)/bench/profiles.o
RUNNER := $(BUILD)/tests/runner

EXAMPLES := $(BUILD)/examples/sim_probe $(BUILD)/examples/probe_command $(BUILD)/examples/trainer

CLI_SRC := $(wildcard programs/*.c)
CLI_OBJ := $(CLI_SRC:programs/%.c=$(BUILD)/programs/%.o)
CLI := $(BUILD)/batchfit

FAKE_LIBS := $(BUILD)/fake/libcuda.so.1 $(BUILD)/fake/libcuda-missing.so \
             $(BUILD)/fake/libnvidia-ml.so.1 $(BUILD)/fake/libnvidia-ml-v1.so \
             $(BUILD)/fake/libnvidia-ml-missing.so
TEST_PROGS := $(BUILD)/tests/childtool $(FAKE_LIBS)

.PHONY: FORCE all lib cli test test-run test-python python deps demo install uninstall clean examples \
        fuzz bench

all: lib cli examples

lib: $(SHARED) $(STATIC)

cli: $(CLI)

# The CLI sees only the public header (-Iinclude, never -Ilib).
$(BUILD)/programs/%.o: programs/%.c programs/cli.h programs/probe.h include/batchfit.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# MPI support is a plugin the CLI loads on --mpi, built where mpicc exists
# (scripts/install-deps.sh installs Open MPI); the core never links MPI.
MPICC ?= mpicc
ifneq ($(shell command -v $(MPICC) 2>/dev/null),)
MPI_PLUGIN := $(BUILD)/libbatchfit-mpi.so
endif

$(CLI): $(CLI_OBJ) $(STATIC) $(MPI_PLUGIN)
	$(CC) -o $@ $(CLI_OBJ) $(STATIC) $(ALL_LDFLAGS) $(LIBS)

$(BUILD)/libbatchfit-mpi.so: mpi/batchfit_mpi.c mpi/batchfit_mpi.h include/batchfit.h
	@mkdir -p $(@D)
	OMPI_CC=$(CC) $(MPICC) $(WARNINGS) -Iinclude $(CFLAGS) $(SAN_FLAGS) -fPIC -shared \
	    -o $@ mpi/batchfit_mpi.c $(LDFLAGS)

# Programs that stand for the user's training commands are built without the
# sanitizers: they must crash, allocate and report as a plain program does.
PLAIN_CFLAGS := $(WARNINGS) $(CPPFLAGS_ALL) $(CFLAGS)

$(BUILD)/tests/childtool: tests/progs/childtool.c
	@mkdir -p $(@D)
	$(CC) $(PLAIN_CFLAGS) -o $@ $< $(LDFLAGS) -ldl

# Fake NVIDIA libraries: the tests point BATCHFIT_CUDA_LIBRARY and
# BATCHFIT_NVML_LIBRARY at them, so the backends' real dlopen/dlsym paths run.
# They export the driver's symbols without its headers, hence no prototypes.
FAKE_CFLAGS = $(PLAIN_CFLAGS) -Wno-missing-prototypes -shared -fPIC -fvisibility=hidden
FAKE_GPU := tests/fake/fake_gpu.c tests/fake/fake_gpu.h

$(BUILD)/fake/libcuda.so.1: tests/fake/fake_cuda.c $(FAKE_GPU)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< tests/fake/fake_gpu.c

$(BUILD)/fake/libcuda-missing.so: tests/fake/fake_cuda.c $(FAKE_GPU)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_MISSING_SYMBOL -o $@ $< tests/fake/fake_gpu.c

$(BUILD)/fake/libnvidia-ml.so.1: tests/fake/fake_nvml.c $(FAKE_GPU)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< tests/fake/fake_gpu.c

$(BUILD)/fake/libnvidia-ml-v1.so: tests/fake/fake_nvml.c $(FAKE_GPU)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_NO_PROCESS_V2 -o $@ $< tests/fake/fake_gpu.c

$(BUILD)/fake/libnvidia-ml-missing.so: tests/fake/fake_nvml.c $(FAKE_GPU)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_MISSING_SYMBOL -o $@ $< tests/fake/fake_gpu.c

# The trainer stands for a user's program: it is built unsanitized (its
# memory is what the tests measure) against an unsanitized copy of the
# static library, through the public header alone, as an installed
# libbatchfit would be used (it uses the recovery controller).
PLAIN_LIB_OBJ := $(LIB_SRC:lib/%.c=$(BUILD)/plain/lib/%.o)
PLAIN_STATIC := $(BUILD)/plain/libbatchfit.a

$(BUILD)/plain/lib/%.o: lib/%.c lib/internal.h lib/probe.h lib/json_tree.h include/batchfit.h
	@mkdir -p $(@D)
	$(CC) $(PLAIN_CFLAGS) -fvisibility=hidden -DBATCHFIT_BUILDING -c $< -o $@

$(PLAIN_STATIC): $(PLAIN_LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/examples/trainer: examples/trainer.c $(PLAIN_STATIC) include/batchfit.h
	@mkdir -p $(@D)
	$(CC) $(PLAIN_CFLAGS) -o $@ $< $(PLAIN_STATIC) $(LDFLAGS) $(LIBS)

$(BUILD)/lib/%.o: lib/%.c lib/internal.h lib/probe.h lib/json_tree.h include/batchfit.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -DBATCHFIT_BUILDING -c $< -o $@

$(SHARED): $(LIB_OBJ)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LIBS)
	ln -sf libbatchfit.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libbatchfit.so

$(STATIC): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

examples: $(EXAMPLES)

$(BUILD)/examples/%: examples/%.c $(STATIC) include/batchfit.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(STATIC) $(ALL_LDFLAGS) $(LIBS)

# The test list is generated from the TEST(name) lines of the test files.
$(BUILD)/tests/list.h: $(TEST_SRC)
	@mkdir -p $(@D)
	grep -ho '^TEST([a-z0-9_]*)' $(TEST_SRC) | sed 's/^TEST(\(.*\))/X(\1)/' > $@

$(BUILD)/tests/%.o: tests/%.c tests/test.h tests/child_helpers.h include/batchfit.h lib/internal.h \
                   lib/probe.h bench/profiles.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ilib -c $< -o $@

$(BUILD)/fuzz/%.o: fuzz/%.c fuzz/fuzz.h include/batchfit.h lib/internal.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Ilib -c $< -o $@

# libFuzzer targets (clang): make fuzz, then e.g.
#   build/fuzz/json -max_total_time=60 fuzz/corpus/json
fuzz: $(FUZZ_TARGETS)

$(BUILD)/fuzz/%: fuzz/fuzz_%.c $(LIB_SRC) fuzz/fuzz.h
	@mkdir -p $(@D)
	clang $(WARNINGS) $(CPPFLAGS_ALL) -Ilib -g -O1 -DBATCHFIT_LIBFUZZER \
	    -fsanitize=fuzzer,address,undefined -o $@ $< $(LIB_SRC) -lm

BENCH := $(BUILD)/bench/bench

$(BUILD)/bench/%.o: bench/%.c bench/profiles.h include/batchfit.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BENCH): $(BUILD)/bench/bench.o $(BUILD)/bench/profiles.o $(STATIC)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS)

CURVES := $(BUILD)/bench/curves

$(CURVES): $(BUILD)/bench/curves.o $(BUILD)/bench/profiles.o $(STATIC)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS)

# The benchmark: the simulated suite plus the real-process run; writes
# bench/results.json, bench/RESULTS.md and bench/trials.svg; then the curves
# the model strategy was not tuned on, bench/CURVES.md.
BENCH_SEED ?= 20261129
BENCH_PROFILES ?= 300
bench: $(BENCH) $(CURVES) $(CLI) $(EXAMPLES) $(BUILD)/tests/childtool
	$(BENCH) --seed $(BENCH_SEED) --profiles $(BENCH_PROFILES) --out bench \
	    --batchfit $(CLI) --trainer $(BUILD)/examples/trainer --childtool $(BUILD)/tests/childtool
	$(CURVES) --out bench/CURVES.md

$(RUNNER): tests/runner.c $(BUILD)/tests/list.h $(TEST_OBJ) $(STATIC)
	$(CC) $(ALL_CFLAGS) -Ilib -I$(BUILD)/tests -DBATCHFIT_SOURCE_DIR='"$(CURDIR)"' \
	    -o $@ tests/runner.c $(TEST_OBJ) $(STATIC) $(ALL_LDFLAGS) $(LIBS)

# What the tests need from Debian, installed only where missing (a no-op on
# a machine that has it all): Open MPI for the --mpi tests, python3-torch,
# python3-pytest and xmllint for the Python package's tests.
deps:
	@sh scripts/install-deps.sh --test

# The Python package's tests (pytest) run first, so the C runner's closing
# line "N passed, N failed" ends the output. Under SANITIZE=1 they are
# skipped: a sanitized libbatchfit.so cannot be loaded into an unsanitized
# Python interpreter.
PYTHON ?= /usr/bin/python3
PYTEST := $(PYTHON) -m pytest -q -p no:cacheprovider python/tests

test: deps
	$(MAKE) --no-print-directory test-run

test-run: $(RUNNER) $(EXAMPLES) $(CLI) $(TEST_PROGS) $(SHARED)
ifeq ($(SANITIZE),1)
	@echo "python tests: skipped under SANITIZE=1 (the sanitized library cannot load into Python)"
else
	BATCHFIT_TEST_BUILD=$(abspath $(BUILD)) $(PYTEST)
endif
	BATCHFIT_TEST_BUILD=$(abspath $(BUILD)) $(RUNNER)

# Only the Python tests.
test-python: $(CLI) $(TEST_PROGS) $(SHARED)
	@sh scripts/install-deps.sh --test
	BATCHFIT_TEST_BUILD=$(abspath $(BUILD)) $(PYTEST)

# Copies the library next to the package, so `pip install ./python` carries it.
python: $(SHARED)
	cp $(SHARED) python/batchfit/$(SONAME)

# The main job: the CLI probing the example trainer on host memory (without
# the cache, so every run shows the search itself).
DEMO_BUDGET ?= 58.05MiB
demo: $(CLI) $(EXAMPLES)
	$(CLI) probe --device host --memory-budget $(DEMO_BUDGET) --no-cache \
	    -- $(BUILD)/examples/trainer --batch-size {batch} --steps 2

# Written on every make (the paths come from this invocation's PREFIX and
# LIBDIR, which no file's date records: a second install to another
# PREFIX installed the first one's .pc) and replaced only when it differs.
$(BUILD)/libbatchfit.pc: libbatchfit.pc.in Makefile FORCE
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

FORCE:

install: lib cli $(BUILD)/libbatchfit.pc
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(CLI) $(DESTDIR)$(BINDIR)/batchfit
	install -m 644 doc/batchfit.1 $(DESTDIR)$(MANDIR)/man1/batchfit.1
	install -m 644 include/batchfit.h $(DESTDIR)$(INCLUDEDIR)/batchfit.h
	install -m 755 $(SHARED) $(DESTDIR)$(LIBDIR)/libbatchfit.so.$(VERSION)
	ln -sf libbatchfit.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libbatchfit.so
	install -m 644 $(STATIC) $(DESTDIR)$(LIBDIR)/libbatchfit.a
	install -m 644 $(BUILD)/libbatchfit.pc $(DESTDIR)$(PKGCONFIGDIR)/libbatchfit.pc
	ln -sf libbatchfit.pc $(DESTDIR)$(PKGCONFIGDIR)/batchfit.pc
	if [ -n "$(MPI_PLUGIN)" ]; then \
	    install -m 755 $(MPI_PLUGIN) $(DESTDIR)$(LIBDIR)/libbatchfit-mpi.so && \
	    install -m 644 mpi/batchfit_mpi.h $(DESTDIR)$(INCLUDEDIR)/batchfit_mpi.h; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/batchfit $(DESTDIR)$(MANDIR)/man1/batchfit.1
	rm -f $(DESTDIR)$(INCLUDEDIR)/batchfit.h $(DESTDIR)$(LIBDIR)/libbatchfit.so* \
	      $(DESTDIR)$(LIBDIR)/libbatchfit.a $(DESTDIR)$(PKGCONFIGDIR)/libbatchfit.pc \
	      $(DESTDIR)$(LIBDIR)/libbatchfit-mpi.so $(DESTDIR)$(INCLUDEDIR)/batchfit_mpi.h \
	      $(DESTDIR)$(PKGCONFIGDIR)/batchfit.pc

clean:
	rm -rf $(BUILD)
