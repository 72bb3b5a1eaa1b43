// tools/vm-run guest helper: sets the guest's CLOCK_REALTIME from the host's clock.
// usage: clocksync FILE, where FILE is on a 9p share that the host serves. Touching FILE makes
// the host stamp it with its own time; the guest reads the stamp back and sets its clock to it
// plus the time since the midpoint of the round trip. Under TCG the guest otherwise has only
// the RTC's whole seconds, so files written through 9p could look up to 1 s "in the future".
// Built static into the initramfs by tools/vm-setup: it costs milliseconds even under TCG.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long nanos(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: clocksync FILE\n");
    return 2;
  }
  struct timespec before, after, now;
  struct stat st;
  clock_gettime(CLOCK_MONOTONIC, &before);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || futimens(fd, NULL) != 0 || fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &after);
  close(fd);
  unlink(argv[1]);
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long t = nanos(st.st_mtim) + nanos(now) - (nanos(before) + nanos(after)) / 2;
  struct timespec set = {t / 1000000000LL, t % 1000000000LL};
  if (clock_settime(CLOCK_REALTIME, &set) != 0) {
    perror("clock_settime");
    return 1;
  }
  return 0;
}
