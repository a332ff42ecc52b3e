// A rank that hangs, for tests: loaded with LD_PRELOAD into every rank of a
// job, it stops (SIGSTOP, as `kill -STOP` does) the process whose rank is
// $PLANC_TEST_STOP_RANK at the moment $PLANC_TEST_STOP_AT names:
//
//   init           before MPI_Init
//   step-end:N     at the Nth broadcast of a step's loss: between steps N-1 and N
//   collective:N   at the Nth MPI_Iallgather (the build check is the first; then
//                  the step's collectives): during a step
//   send:N         at the Nth MPI_Isend (a pipeline's messages): during a step
//   checkpoint:N   at the fsync of its file of the Nth checkpoint: during a checkpoint
//   finalize       before MPI_Finalize
//
// Before it stops it writes the time (seconds since the epoch) into
// $PLANC_TEST_STOP_STAMP, from which the test measures how long the others
// take to end the job. Other processes, and other moments, run as usual.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int is_target(void) {
  const char *want = getenv("PLANC_TEST_STOP_RANK");
  const char *mine = getenv("OMPI_COMM_WORLD_RANK");
  return want && mine && strcmp(want, mine) == 0;
}

/// Whether this call is the moment: the stop point is `kind` (with a count,
/// "kind:N"), and this is the Nth call of that kind.
static int moment(const char *kind, int counted) {
  static int calls[8];
  static const char *kinds[8] = {"init", "step-end", "collective", "send", "checkpoint", "finalize"};
  const char *at = getenv("PLANC_TEST_STOP_AT");
  if (!at || !is_target()) return 0;
  size_t n = strlen(kind);
  if (strncmp(at, kind, n) != 0 || (at[n] != 0 && at[n] != ':')) return 0;
  if (!counted) return 1;
  for (int k = 0; k < 8 && kinds[k]; ++k)
    if (strcmp(kinds[k], kind) == 0) return ++calls[k] == (at[n] == ':' ? atoi(at + n + 1) : 1);
  return 0;
}

static void stop_here(void) {
  const char *stamp = getenv("PLANC_TEST_STOP_STAMP");
  if (stamp) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    FILE *f = fopen(stamp, "w");
    if (f) {
      fprintf(f, "%ld.%09ld\n", (long)now.tv_sec, now.tv_nsec);
      fclose(f);
    }
  }
  raise(SIGSTOP);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  if (moment("init", 0)) stop_here();
  return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *request) {
  if (moment("step-end", 1)) stop_here();
  return PMPI_Ibcast(buf, count, type, root, comm, request);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (moment("step-end", 1)) stop_here();
  return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Iallgather(const void *send, int sendCount, MPI_Datatype sendType, void *recv, int recvCount,
                   MPI_Datatype recvType, MPI_Comm comm, MPI_Request *request) {
  if (moment("collective", 1)) stop_here();
  return PMPI_Iallgather(send, sendCount, sendType, recv, recvCount, recvType, comm, request);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request) {
  if (moment("send", 1)) stop_here();
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Finalize(void) {
  if (moment("finalize", 0)) stop_here();
  return PMPI_Finalize();
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = readlink(link, path, sizeof path - 1);
  if (len > 0) {
    path[len] = 0;
    if (strstr(path, ".safetensors") && moment("checkpoint", 1)) stop_here();
  }
  return real(fd);
}
