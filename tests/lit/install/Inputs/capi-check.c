/* Checks plans through the installed C API (<planc/planc.h>, libplanc.so),
 * as a program in another language would: a clean plan from a string, a
 * plan with an error, a file over a budget, a bad override, the memory check
 * skipped, bad arguments, several checks at once on threads. It prints what it reads, one fact per line, for
 * FileCheck, and writes each ledger to OUT_DIR/<case>.json for the test to
 * validate against docs/memory-check.schema.json
 * (tests/lit/install/package.test).
 *
 *   capi-check PLAN_FILE OUT_DIR */
#include <planc/planc.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kClean[] =
    "import std.nn\n"
    "model toy {\n"
    "  let hidden = 32, vocab = 128, seq = 16\n"
    "  input tokens  : i32[batch, seq]\n"
    "  input targets : i32[batch, seq]\n"
    "  x = embedding(tokens, vocab, hidden) as wte\n"
    "  loss = cross_entropy(tied_linear(layernorm(x), wte.weight), targets)\n"
    "}\n"
    "train { global_batch = 8, micro_batch = 4, steps = 10 }\n"
    "cluster { nodes = 1, gpus_per_node = 2, device cpu }\n"
    "parallel { mesh(dp = 2) }\n";

/* The same plan with `hidden` misspelled on line 6. */
static const char kTypo[] =
    "import std.nn\n"
    "model toy {\n"
    "  let hidden = 32, vocab = 128, seq = 16\n"
    "  input tokens  : i32[batch, seq]\n"
    "  input targets : i32[batch, seq]\n"
    "  x = embedding(tokens, vocab, hiden) as wte\n"
    "  loss = cross_entropy(tied_linear(layernorm(x), wte.weight), targets)\n"
    "}\n";

static const char *out_dir;

static void show(const char *what, planc_check_result *r) {
  if (!r) {
    printf("%s: no result\n", what);
    return;
  }
  const char *ledger = planc_result_ledger_json(r);
  printf("%s: errors %d\n", what, planc_result_has_errors(r));
  printf("%s: diagnostics %s\n", what, planc_result_diagnostics_json(r));
  if (ledger) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.json", out_dir, what);
    FILE *f = fopen(path, "w");
    if (!f || fputs(ledger, f) < 0 || fclose(f) != 0) {
      printf("%s: cannot write %s\n", what, path);
    } else {
      printf("%s: ledger written\n", what);
    }
  } else {
    printf("%s: ledger (none)\n", what);
  }
  planc_result_free(r); /* the strings go with it */
}

/* Several threads check the same file at once: each gets the ledger one
 * thread alone gets (planc.h: calls share no state). */
enum { kThreads = 4 };
static const char *thread_plan;
static char *thread_ledgers[kThreads];

static void *check_on_thread(void *slot) {
  planc_check_result *r = planc_check_file(thread_plan, NULL);
  const char *ledger = r ? planc_result_ledger_json(r) : NULL;
  if (ledger) {
    char *copy = malloc(strlen(ledger) + 1);
    if (copy) strcpy(copy, ledger);
    *(char **)slot = copy;
  }
  planc_result_free(r);
  return NULL;
}

static void threads(const char *plan) {
  planc_check_result *alone = planc_check_file(plan, NULL);
  const char *expected = alone ? planc_result_ledger_json(alone) : NULL;
  pthread_t t[kThreads];
  thread_plan = plan;
  for (int i = 0; i < kThreads; ++i) pthread_create(&t[i], NULL, check_on_thread, &thread_ledgers[i]);
  int same = expected != NULL;
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(t[i], NULL);
    same = same && thread_ledgers[i] && strcmp(thread_ledgers[i], expected) == 0;
    free(thread_ledgers[i]);
  }
  printf("threads: %d checks at once, %s\n", kThreads, same ? "each ledger as one alone" : "ledgers differ");
  planc_result_free(alone);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: capi-check PLAN_FILE OUT_DIR\n");
    return 2;
  }
  out_dir = argv[2];
  printf("version: %s\n", planc_version());

  /* Not NUL-terminated on purpose: the size is the length. */
  char copy[sizeof kClean];
  memcpy(copy, kClean, sizeof kClean - 1);
  copy[sizeof kClean - 1] = '#';
  show("clean", planc_check_string("toy.plan", copy, sizeof kClean - 1, NULL));

  show("typo", planc_check_string("typo.plan", kTypo, strlen(kTypo), NULL));

  planc_check_options tight = {NULL, 0, 1024 * 1024, 0};
  show("budget", planc_check_file(argv[1], &tight));

  const char *overrides[] = {"train.micro_batch=2", "parallel.zero=7"};
  planc_check_options bad = {overrides, 2, 0, 0};
  show("override", planc_check_file(argv[1], &bad));

  planc_check_options skip = {NULL, 0, 0, 1};
  show("skip", planc_check_file(argv[1], &skip));

  show("missing", planc_check_file("no-such.plan", NULL));
  show("null", planc_check_file(NULL, NULL));

  threads(argv[1]);
  return 0;
}
