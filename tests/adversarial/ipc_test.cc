// IPC and what one run can leave for another (catalogue IPC-01, IPC-02): System V objects,
// files in the workspace and /dev/shm, keys, and locks on the shared rootfs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

TEST_P(Adversarial, IPC_01_SysvObjectsDieWithTheRun) {
  std::random_device random;
  const int key = static_cast<int>(0x6d630000u | (random() & 0xffffu));
  json created = Contained("ipc01_sysv_shm", {{"phase", "create"}, {"key", key}});
  ExpectEach(created, {"shmget 4 MiB", "semget", "msgget"}, "ok");
  EXPECT_EQ(created["shm touched"], true);
  // The host's IPC namespace never had them.
  for (const char* kind : {"shm", "sem", "msg"}) {
    const std::string table = ReadHostFile(std::string("/proc/sysvipc/") + kind);
    EXPECT_EQ(table.find(" " + std::to_string(key) + " "), std::string::npos) << kind;
  }
  json o = Contained("ipc01_sysv_shm", {{"phase", "check"}, {"key", key}});
  ExpectEach(o, {"/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg"}, 0);
  ExpectEach(o, {"shmget key", "semget key", "msgget key"}, "ENOENT");
}

TEST_P(Adversarial, IPC_02_NothingCarriesOverToTheNextRun) {
  const std::string token = RandomToken();
  json wrote = Contained("ipc02_cross_run", {{"phase", "write"}, {"token", token}});
  ExpectEach(wrote,
             {"write /tmp/marker-" + token, "write /tmp/.cache/marker-" + token,
              "write /dev/shm/marker-" + token, "write /dev/shm/sem.marker-" + token},
             "ok");
  EXPECT_EQ(wrote["add_key"], json("EPERM"));
  json o = Contained("ipc02_cross_run", {{"phase", "read"}, {"token", token}});
  ExpectEach(o,
             {"read /tmp/marker-" + token, "read /tmp/.cache/marker-" + token,
              "read /dev/shm/marker-" + token, "read /dev/shm/sem.marker-" + token},
             "ENOENT");
  EXPECT_EQ(o["request_key"], json("EPERM"));
}

}  // namespace
}  // namespace mcpexec::testing
