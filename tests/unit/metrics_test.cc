// The /metrics building blocks: the text format, the instruments, what exec calls and the
// worker pool record after simulated events, serve's families, and the /readyz judgement.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>

#include "cli/readiness.h"
#include "cli/serve_metrics.h"
#include "exec/exec_metrics.h"
#include "mcp/worker_pool.h"
#include "metrics/instruments.h"
#include "metrics/text_format.h"

namespace mcpexec {
namespace {

using metrics::TextWriter;
using metrics::Type;
using namespace std::chrono_literals;

TEST(MetricsText, FamilyHasHelpAndTypeThenSamples) {
  TextWriter out;
  out.Family("mcp_exec_x_total", "What x counts", Type::kCounter);
  out.Sample("mcp_exec_x_total", {{"code", "200"}}, uint64_t{3});
  out.Sample("mcp_exec_x_total", uint64_t{4});
  EXPECT_EQ(out.Take(),
            "# HELP mcp_exec_x_total What x counts\n"
            "# TYPE mcp_exec_x_total counter\n"
            "mcp_exec_x_total{code=\"200\"} 3\n"
            "mcp_exec_x_total 4\n");
  EXPECT_EQ(out.Take(), "");
}

TEST(MetricsText, EscapesHelpAndLabelValues) {
  TextWriter out;
  out.Family("m", "a\\b\nc \"q\"", Type::kGauge);
  out.Sample("m", {{"l", "x\"y\\z\nw"}, {"k", "v"}}, 1.5);
  EXPECT_EQ(out.Take(),
            "# HELP m a\\\\b\\nc \"q\"\n"
            "# TYPE m gauge\n"
            "m{l=\"x\\\"y\\\\z\\nw\",k=\"v\"} 1.5\n");
}

TEST(MetricsText, ValuesAreShortestRoundTrips) {
  EXPECT_EQ(metrics::FormatValue(0.005), "0.005");
  EXPECT_EQ(metrics::FormatValue(300), "300");
  EXPECT_EQ(metrics::FormatValue(2.5), "2.5");
  EXPECT_EQ(metrics::FormatValue(-7), "-7");
  EXPECT_EQ(metrics::FormatValue(1e20), "1e+20");
  EXPECT_EQ(metrics::FormatValue(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(metrics::FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(metrics::FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(metrics::FormatValue(std::nan("")), "NaN");
}

TEST(MetricsInstruments, LabeledCounterWritesPresetZerosAndCounts) {
  metrics::LabeledCounter c("code", {"200"});
  c.Add("404");
  c.Add("404", 2);
  EXPECT_EQ(c.Value("200"), 0u);
  EXPECT_EQ(c.Value("404"), 3u);
  EXPECT_EQ(c.Value("500"), 0u);
  TextWriter out;
  c.Write(out, "h");
  EXPECT_EQ(out.Take(), "h{code=\"200\"} 0\nh{code=\"404\"} 3\n");
}

TEST(MetricsInstruments, HistogramBucketsAreCumulativeAndUpperBoundsInclusive) {
  metrics::Histogram h({0.125, 1, 10});
  h.Observe(0.0625);
  h.Observe(0.125);  // le="0.125" holds it: bounds are inclusive
  h.Observe(5);
  h.Observe(50);
  const metrics::Histogram::Snapshot s = h.Take();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 2, 3}));
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.sum, 55.1875);
  TextWriter out;
  h.Write(out, "d_seconds");
  EXPECT_EQ(out.Take(),
            "d_seconds_bucket{le=\"0.125\"} 2\n"
            "d_seconds_bucket{le=\"1\"} 2\n"
            "d_seconds_bucket{le=\"10\"} 3\n"
            "d_seconds_bucket{le=\"+Inf\"} 4\n"
            "d_seconds_sum 55.1875\n"
            "d_seconds_count 4\n");
}

sandbox::RunResult Exited(int exit_code) {
  sandbox::RunResult r;
  r.exit_code = exit_code;
  return r;
}

TEST(ExecMetrics, ClassifiesRunsCancelledThenTimeoutThenOomThenExit) {
  EXPECT_EQ(exec::ClassifyRun(Exited(0)), exec::CallOutcome::kOk);
  EXPECT_EQ(exec::ClassifyRun(Exited(3)), exec::CallOutcome::kExitNonZero);
  EXPECT_EQ(exec::ClassifyRun(Exited(128 + 9)), exec::CallOutcome::kExitNonZero);
  sandbox::RunResult r = Exited(-1);
  r.oom_killed = true;  // a process of the run was OOM-killed, whatever ended it
  EXPECT_EQ(exec::ClassifyRun(r), exec::CallOutcome::kOomKilled);
  r.outcome = sandbox::Outcome::kTimedOut;
  EXPECT_EQ(exec::ClassifyRun(r), exec::CallOutcome::kTimeout);
  r.outcome = sandbox::Outcome::kCancelled;
  EXPECT_EQ(exec::ClassifyRun(r), exec::CallOutcome::kCancelled);
}

TEST(ExecMetrics, CountsCallsDurationsAndOutputAfterSimulatedCalls) {
  exec::ExecMetrics m;
  m.Record(exec::CallOutcome::kOk, 20ms, 6);
  m.Record(exec::CallOutcome::kOk, 3ms, 4);
  m.Record(exec::CallOutcome::kExitNonZero, 40ms, 100);
  m.Record(exec::CallOutcome::kTimeout, 1s, 0);
  m.Record(exec::CallOutcome::kSetupError, 2ms);
  m.Record(exec::CallOutcome::kInvalid, std::nullopt);
  EXPECT_EQ(m.Calls(exec::CallOutcome::kOk), 2u);
  EXPECT_EQ(m.Calls(exec::CallOutcome::kExitNonZero), 1u);
  EXPECT_EQ(m.Calls(exec::CallOutcome::kTimeout), 1u);
  EXPECT_EQ(m.Calls(exec::CallOutcome::kOomKilled), 0u);
  EXPECT_EQ(m.Calls(exec::CallOutcome::kSetupError), 1u);
  EXPECT_EQ(m.Calls(exec::CallOutcome::kInvalid), 1u);
  EXPECT_EQ(m.OutputBytes(), 110u);
  const metrics::Histogram::Snapshot d = m.Durations();
  EXPECT_EQ(d.count, 5u);  // not the invalid call: it never reached the engine
  ASSERT_EQ(d.bounds.size(), std::size(exec::kDurationBuckets));
  EXPECT_EQ(d.bounds.front(), 0.005);
  EXPECT_EQ(d.bounds.back(), 300);
  EXPECT_EQ(d.cumulative[0], 2u);  // 2 ms and 3 ms <= 5 ms
  EXPECT_EQ(d.cumulative.back(), 5u);

  TextWriter out;
  m.Write(out);
  const std::string text = out.Take();
  EXPECT_NE(text.find("# TYPE mcp_exec_exec_calls_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_exec_calls_total{outcome=\"ok\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_exec_calls_total{outcome=\"oom\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_exec_calls_total{outcome=\"cancelled\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE mcp_exec_exec_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_exec_duration_seconds_bucket{le=\"0.005\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("mcp_exec_exec_duration_seconds_count 5\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_output_bytes_total 110\n"), std::string::npos);
}

// A latch the pool's tasks wait on, so that the test decides when they end.
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(WorkerPoolStats, CountsQueuedRunningAndRejectedBusy) {
  mcp::WorkerPool pool(1, 1);
  Gate gate;
  std::promise<void> started;
  ASSERT_TRUE(pool.TrySubmit([&] {
    started.set_value();
    gate.Wait();
  }));
  started.get_future().wait();
  ASSERT_TRUE(pool.TrySubmit([&] { gate.Wait(); }));
  EXPECT_FALSE(pool.TrySubmit([] {}));
  EXPECT_FALSE(pool.TrySubmit([] {}));
  mcp::WorkerPool::Stats s = pool.GetStats();
  EXPECT_EQ(s.running, 1u);
  EXPECT_EQ(s.queued, 1u);
  EXPECT_EQ(s.rejected, 2u);
  gate.Open();
  pool.Drain();
  s = pool.GetStats();
  EXPECT_EQ(s.running, 0u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.rejected, 2u);
}

class NullSink final : public mcp::MessageSink {
 public:
  bool Send(const nlohmann::json&, bool) override { return true; }
};

class FakeEngine final : public engine::Engine {
 public:
  explicit FakeEngine(engine::EngineState state) : state_(state) {}
  const char* Name() const override { return state_.name; }
  Result<sandbox::RunResult> Run(const sandbox::Program&, const sandbox::RunLimits&,
                                 const sandbox::RunHooks&) override {
    return MakeError(ErrorCode::kUnavailable, "fake");
  }
  Result<sandbox::Sandbox> TakeWarm() override {
    return MakeError(ErrorCode::kUnavailable, "fake");
  }
  const sandbox::LaunchPlan& Plan() const override { std::abort(); }
  engine::EngineState State() const override { return state_; }

 private:
  engine::EngineState state_;
};

engine::EngineState ZygoteState(size_t ready, bool alive) {
  engine::EngineState s;
  s.name = "zygote";
  s.ready = ready;
  s.target = 2;
  s.zygote = true;
  s.zygote_alive = alive;
  s.zygote_forks = 7;
  return s;
}

TEST(ServeMetrics, WritesBuildPoolEngineAndLimitsFamilies) {
  exec::ExecMetrics exec_metrics;
  exec_metrics.Record(exec::CallOutcome::kOk, 10ms, 1);
  mcp::WorkerPool pool(3, 4);
  FakeEngine engine(ZygoteState(1, true));
  sandbox::Teardown teardown;
  mcp::TaskStore tasks(mcp::TaskLimits{});
  (void)*tasks.Create("caller", std::nullopt);
  mcp::Subscriptions subscriptions([](const mcp::TaskView&, bool) { return nlohmann::json::object(); });
  mcp::Subscriptions::Listen listen;
  listen.caller = "caller";
  listen.sink = std::make_shared<NullSink>();
  ASSERT_TRUE(std::holds_alternative<uint64_t>(subscriptions.Open(std::move(listen))));
  TextWriter out;
  cli::WriteServeMetrics(out, {"1.2.3", &exec_metrics, &pool, &engine, limits::Backend::kCgroup1,
                               nullptr, &teardown, &tasks, &subscriptions});
  const std::string text = out.Take();
  for (const char* line : {
           "mcp_exec_build_info{version=\"1.2.3\"} 1\n",
           "mcp_exec_exec_calls_total{outcome=\"ok\"} 1\n",
           "mcp_exec_workers 3\n",
           "mcp_exec_queue_depth 0\n",
           "mcp_exec_runs_in_flight 0\n",
           "mcp_exec_calls_rejected_busy_total 0\n",
           "mcp_exec_engine_info{engine=\"zygote\"} 1\n",
           "mcp_exec_engine_sandboxes_ready 1\n",
           "mcp_exec_engine_sandboxes_target 2\n",
           "mcp_exec_zygote_alive 1\n",
           "mcp_exec_zygote_forks_total 7\n",
           "mcp_exec_limits_backend_info{backend=\"cgroup1\"} 1\n",
           "mcp_exec_teardown_backlog 0\n",
           "mcp_exec_teardowns_total 0\n",
           "mcp_exec_teardowns_inline_total 0\n",
           "mcp_exec_teardown_failures_total 0\n",
           "mcp_exec_tasks_running 1\n",
           "mcp_exec_tasks_kept 1\n",
           "mcp_exec_task_result_bytes 0\n",
           "mcp_exec_tasks_created_total 1\n",
           "mcp_exec_tasks_refused_total 0\n",
           "mcp_exec_tasks_dropped_total 0\n",
           "mcp_exec_subscriptions_open 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  }
  // Every family is typed once.
  EXPECT_EQ(text.find("# TYPE mcp_exec_workers gauge\n"), text.rfind("# TYPE mcp_exec_workers "));
}

TEST(ServeMetrics, ColdEngineHasNoZygoteFamilies) {
  exec::ExecMetrics exec_metrics;
  mcp::WorkerPool pool(1, 1);
  FakeEngine engine(engine::EngineState{});
  TextWriter out;
  cli::WriteServeMetrics(out, {"v", &exec_metrics, &pool, &engine, limits::Backend::kRlimit});
  const std::string text = out.Take();
  EXPECT_NE(text.find("mcp_exec_engine_info{engine=\"cold\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_limits_backend_info{backend=\"rlimit\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("mcp_exec_zygote"), std::string::npos);
}

// engine::MemoryOf, the sum behind mcp_exec_environment_memory_*: a process and its children
// in its PID namespace, from smaps_rollup; a process that is gone counts nothing.
TEST(EngineMemory, SumsAProcessAndItsChildrenAndNothingForOneGone) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  const engine::ProcessMemory alone = engine::MemoryOf({child});
  const engine::ProcessMemory both = engine::MemoryOf({getpid()});
  const engine::ProcessMemory twice = engine::MemoryOf({getpid(), child});
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_EQ(alone.processes, 1u);
  EXPECT_GT(alone.rss_bytes, 0u);
  EXPECT_GT(alone.pss_bytes, 0u);
  EXPECT_LE(alone.pss_bytes, alone.rss_bytes) << "the child shares its pages with its parent";
  EXPECT_GE(both.processes, 2u) << "this process and its child";
  EXPECT_GT(both.rss_bytes, alone.rss_bytes);
  EXPECT_EQ(twice.processes, both.processes) << "a process listed twice counts once";
  const engine::ProcessMemory gone = engine::MemoryOf({child});
  EXPECT_EQ(gone.processes, 0u);
  EXPECT_EQ(gone.rss_bytes, 0u);
  EXPECT_EQ(gone.pss_bytes, 0u);
}

std::vector<std::string> FailingChecks(const cli::ReadinessFacts& facts) {
  std::vector<std::string> checks;
  for (const mcp::NotReady& f : cli::JudgeReadiness(facts)) {
    EXPECT_FALSE(f.reason.empty()) << f.check;
    checks.push_back(f.check);
  }
  return checks;
}

TEST(Readiness, ColdIsWarmAlways) {
  cli::ReadinessFacts facts;
  EXPECT_TRUE(FailingChecks(facts).empty());
}

TEST(Readiness, PoolNeedsASandboxReady) {
  cli::ReadinessFacts facts;
  facts.engine.name = "pool";
  facts.engine.target = 2;
  EXPECT_EQ(FailingChecks(facts), std::vector<std::string>{"engine"});
  facts.engine.ready = 1;
  EXPECT_TRUE(FailingChecks(facts).empty());
}

TEST(Readiness, ZygoteNeedsASandboxReadyOrALiveZygote) {
  cli::ReadinessFacts facts;
  facts.engine = ZygoteState(0, false);
  EXPECT_EQ(FailingChecks(facts), std::vector<std::string>{"engine"});
  facts.engine = ZygoteState(0, true);
  EXPECT_TRUE(FailingChecks(facts).empty());
  facts.engine = ZygoteState(1, false);
  EXPECT_TRUE(FailingChecks(facts).empty());
}

TEST(Readiness, NamesEveryFailingCondition) {
  cli::ReadinessFacts facts;
  facts.rootfs_problem = "rootfs /x: ENOENT";
  facts.limits_problem = "access(/sys/fs/cgroup/x, W_OK): ENOENT";
  facts.engine = ZygoteState(0, false);
  const std::vector<mcp::NotReady> failing = cli::JudgeReadiness(facts);
  ASSERT_EQ(failing.size(), 3u);
  EXPECT_EQ(failing[0].check, "rootfs");
  EXPECT_EQ(failing[0].reason, "rootfs /x: ENOENT");
  EXPECT_EQ(failing[1].check, "limits");
  EXPECT_EQ(failing[2].check, "engine");
}

}  // namespace
}  // namespace mcpexec
