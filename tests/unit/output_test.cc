#include "sandbox/output.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "base/sys.h"

namespace mcpexec::sandbox {
namespace {

TEST(CappedOutput, KeepsEverythingUnderTheCap) {
  CappedOutput out(10);
  out.Append(Stream::kStdout, "abc");
  out.Append(Stream::kStderr, "de");
  out.Append(Stream::kStdout, "fgh");
  EXPECT_EQ(out.Stdout(), "abcfgh");
  EXPECT_EQ(out.Stderr(), "de");
  EXPECT_FALSE(out.Truncated());
}

TEST(CappedOutput, ExactlyAtTheCapIsNotTruncated) {
  CappedOutput out(4);
  out.Append(Stream::kStdout, "abcd");
  EXPECT_EQ(out.Stdout(), "abcd");
  EXPECT_FALSE(out.Truncated());
}

TEST(CappedOutput, CapIsCombinedAcrossStreamsInArrivalOrder) {
  CappedOutput out(5);
  out.Append(Stream::kStderr, "123");
  out.Append(Stream::kStdout, "4567");
  out.Append(Stream::kStderr, "89");
  EXPECT_EQ(out.Stderr(), "123");
  EXPECT_EQ(out.Stdout(), "45");
  EXPECT_TRUE(out.Truncated());
  EXPECT_EQ(out.Held(), 5u);
}

TEST(CappedOutput, HeldBytesStayBoundedWhateverIsAppended) {
  CappedOutput out(1000);
  const std::string chunk(65536, 'x');
  for (int i = 0; i < 1000; ++i) out.Append(Stream::kStdout, chunk);
  EXPECT_EQ(out.Held(), 1000u);
  EXPECT_LE(out.Stdout().capacity(), 2 * 65536u);
  EXPECT_TRUE(out.Truncated());
}

TEST(CappedOutput, TruncationDoesNotSplitACharacter) {
  CappedOutput out(4);
  out.Append(Stream::kStdout, "ab\xE2\x82\xAC");  // the euro sign would straddle the cap
  EXPECT_EQ(out.Stdout(), "ab");
  EXPECT_TRUE(out.Truncated());
}

// A pipe whose read end is non-blocking, as the supervisor's are.
Pipe OutputPipe() {
  auto pipe = MakePipe();
  EXPECT_TRUE(pipe.ok());
  EXPECT_TRUE(SetNonBlocking(pipe->read.Get()).ok());
  return std::move(*pipe);
}

int Pending(const Pipe& pipe) {
  int n = -1;
  EXPECT_EQ(ioctl(pipe.read.Get(), FIONREAD, &n), 0);
  return n;
}

TEST(DrainPipe, ReadsWhatIsThereUntilEmptyThenEof) {
  Pipe pipe = OutputPipe();
  CappedOutput out(100);
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kEmpty);
  ASSERT_TRUE(WriteAll(pipe.write.Get(), "hello").ok());
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kEmpty);
  EXPECT_EQ(out.Stdout(), "hello");
  pipe.write.Reset();
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kClosed);
  EXPECT_FALSE(out.Truncated());
}

// Issue 11, finding 6: DrainPipe reads one byte past the cap (to know the output is truncated)
// and leaves the rest in the pipe, now and on every later call; past the cap the supervisor
// empties the pipes with DiscardPipe, every kDiscardInterval.
TEST(DrainPipe, StopsReadingOnceTheOutputIsTruncated) {
  Pipe pipe = OutputPipe();
  CappedOutput out(10);
  ASSERT_TRUE(WriteAll(pipe.write.Get(), std::string(100, 'x')).ok());
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kCapped);
  EXPECT_TRUE(out.Truncated());
  EXPECT_EQ(out.Stdout(), std::string(10, 'x'));
  EXPECT_EQ(Pending(pipe), 89);
  ASSERT_TRUE(WriteAll(pipe.write.Get(), std::string(100, 'y')).ok());
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStderr, out), DrainEnd::kCapped);
  EXPECT_EQ(Pending(pipe), 189);
  EXPECT_EQ(out.Held(), 10u);
}

TEST(DiscardPipe, DropsWhatIsThereWithinItsBudgetThenSeesEof) {
  Pipe pipe = OutputPipe();
  UniqueFd null_fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(null_fd.Valid());
  EXPECT_EQ(DiscardPipe(pipe.read.Get(), null_fd.Get()), DrainEnd::kEmpty);
  ASSERT_TRUE(WriteAll(pipe.write.Get(), std::string(5000, 'x')).ok());
  EXPECT_EQ(DiscardPipe(pipe.read.Get(), null_fd.Get(), 3000), DrainEnd::kMore);
  EXPECT_EQ(Pending(pipe), 2000);
  EXPECT_EQ(DiscardPipe(pipe.read.Get(), null_fd.Get()), DrainEnd::kEmpty);
  EXPECT_EQ(Pending(pipe), 0);
  pipe.write.Reset();
  EXPECT_EQ(DiscardPipe(pipe.read.Get(), null_fd.Get()), DrainEnd::kClosed);
}

TEST(DiscardPipe, GrowsThePipeSoAWriterWaitsLess) {
  Pipe pipe = OutputPipe();
  GrowPipeForDiscard(pipe.read.Get());
  EXPECT_EQ(fcntl(pipe.read.Get(), F_GETPIPE_SZ), kDiscardPipeBytes);
}

TEST(DrainPipe, ExactlyAtTheCapKeepsReadingUntilAByteTooMany) {
  Pipe pipe = OutputPipe();
  CappedOutput out(4);
  ASSERT_TRUE(WriteAll(pipe.write.Get(), "abcd").ok());
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kEmpty);
  EXPECT_FALSE(out.Truncated());
  ASSERT_TRUE(WriteAll(pipe.write.Get(), "ef").ok());
  EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kCapped);
  EXPECT_TRUE(out.Truncated());
  EXPECT_EQ(Pending(pipe), 1);
}

// Issue 11, finding 7: a writer that grows its pipe to the 1 MiB default maximum and keeps it
// full gets at most one budget read per call, so the supervisor is back at its deadline and
// cancel checks after each. The writer refills the pipe as fast as it is read, so without the
// budget the call would return only when the writer stops (after 64 MiB here).
TEST(DrainPipe, AWriterKeepingAGrownPipeFullGetsOneBudgetPerCall) {
  Pipe pipe = OutputPipe();
  ASSERT_EQ(fcntl(pipe.write.Get(), F_SETPIPE_SZ, 1 << 20), 1 << 20);
  std::atomic<bool> stop{false};
  std::atomic<size_t> written{0};
  std::thread writer([&] {
    const std::string chunk(1 << 20, 'x');
    while (!stop.load() && written.load() < (64u << 20)) {
      if (!WriteAll(pipe.write.Get(), chunk).ok()) break;
      written += chunk.size();
    }
    pipe.write.Reset();
  });
  // The pipe is full before the first call: the writer is ahead, as in a flood.
  while (written.load() < (1u << 20)) std::this_thread::yield();

  CappedOutput out(256u << 20);
  for (int call = 1; call <= 3; ++call) {
    EXPECT_EQ(DrainPipe(pipe.read.Get(), Stream::kStdout, out), DrainEnd::kMore) << call;
    EXPECT_EQ(out.Held(), call * kDrainBudgetBytes) << call;
  }
  stop = true;
  DrainEnd end = DrainEnd::kMore;
  while (end != DrainEnd::kClosed) end = DrainPipe(pipe.read.Get(), Stream::kStdout, out);
  writer.join();
  EXPECT_EQ(out.Held(), written.load());
}

}  // namespace
}  // namespace mcpexec::sandbox
