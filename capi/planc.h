/*===- planc/planc.h - planc's C API ------------------------------*- C -*-===
 *
 * `planc check` for programs in any language that can call C (Python's
 * ctypes, Rust, Go, ...): check a plan held in a file or a string and read
 * what was found as JSON. Installed as <planc/planc.h>, with libplanc.
 *
 *   planc_check_result *r = planc_check_file("gpt2.plan", NULL);
 *   if (r && !planc_result_has_errors(r)) puts(planc_result_ledger_json(r));
 *   planc_result_free(r);
 *
 * The JSON is the same as the driver's: each diagnostic as one object of
 * `planc check --diagnostics-format=json` (docs/language.md), the ledger as
 * `planc check --json` prints it (docs/memory.md,
 * docs/memory-check.schema.json). Every call is independent (no global
 * state), so calls may run on several threads at once.
 *
 *===----------------------------------------------------------------------===*/
#ifndef PLANC_PLANC_H
#define PLANC_PLANC_H

#include <stddef.h>

#if defined(__GNUC__)
#define PLANC_API __attribute__((visibility("default")))
#else
#define PLANC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What `planc check` takes besides the plan. A zeroed struct (or NULL) is
 * `planc check FILE` with no options. */
typedef struct planc_check_options {
  const char *const *overrides;    /* "block.key=value", as `--set`: "parallel.zero=2" */
  size_t num_overrides;
  unsigned long long budget_bytes; /* the memory budget per rank; 0: the device's memory (`--budget`) */
  int skip_memory;                 /* nonzero: no memory check, no ledger (`--no-memory`) */
} planc_check_options;

/* The outcome of one check; owns every string its accessors return. */
typedef struct planc_check_result planc_check_result;

/* Checks the plan in the file at `path` (its imports are found beside it and
 * in the built-in standard library). NULL only when `path` is NULL or memory
 * runs out; an unreadable file is a result with an error diagnostic. */
PLANC_API planc_check_result *planc_check_file(const char *path, const planc_check_options *options);

/* Checks the plan `text` (`size` bytes, not necessarily NUL-terminated);
 * `name` is the file name its diagnostics show. NULL only when `name` or
 * `text` is NULL or memory runs out. */
PLANC_API planc_check_result *planc_check_string(const char *name, const char *text, size_t size,
                                                 const planc_check_options *options);

/* 1 if the plan has errors (`planc check` would exit 1), else 0. A plan over
 * its memory budget has errors. */
PLANC_API int planc_result_has_errors(const planc_check_result *result);

/* Every diagnostic, warnings and notes included, as one JSON array: "[]"
 * when the plan is clean. Owned by the result. */
PLANC_API const char *planc_result_diagnostics_json(const planc_check_result *result);

/* The memory ledger and its verdict as one JSON object, or NULL when the
 * memory was not checked: options->skip_memory, or errors before the memory
 * check (the diagnostics say why). Owned by the result. */
PLANC_API const char *planc_result_ledger_json(const planc_check_result *result);

/* Frees the result and every string it returned. NULL is ignored. */
PLANC_API void planc_result_free(planc_check_result *result);

/* "0.1.0 (REVISION)": the release and the source revision, as `planc --version`. */
PLANC_API const char *planc_version(void);

#ifdef __cplusplus
}
#endif

#endif
