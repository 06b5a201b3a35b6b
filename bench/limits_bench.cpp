// Issue 31: how closely the runner's node and memory limits hold on a blow-up workload.
//
// Workload: egg's math rules (`math::rules()`, ConstantFold) on the 7 expressions of egg's
// math_ematching_bench, SimpleScheduler (every rule applied to all its matches, so one rule's
// application can multiply the e-graph), no iteration or time limit in the way. For each limit
// it prints one table row: what the limit was, why the run stopped, and what it reached —
// hashcons nodes (`total_size()`, what the node limit counts), the e-graph's own bytes
// (`memory_usage()`, what the memory limit counts) and the peak RSS growth of the run.
//
// Each run happens in a forked child, so that peak RSS is its own: the child returns freed heap
// to the system (malloc_trim), resets the high-water mark (/proc/self/clear_refs, 5), runs,
// and reports VmHWM minus the VmRSS it started with. A small run in the parent first makes the
// program's code resident, so that the growth is the run's data.
//
// With --ilp FILE..., it checks exact extraction's time limit instead: `extract_ilp` (backend
// auto) on each egraph-serialize file under limits from 5 ms to 0.5 s, five runs each, and
// prints the slowest run's wall time against the limit and whether CBC was killed.
//
// Usage: limits_bench [--backoff]   (BackoffScheduler, egg's default, instead of SimpleScheduler)
//        limits_bench --ilp FILE...
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <tensat/extract/ilp.h>
#include <tensat/io/json.h>
#include <tensat/tensat.h>

#include "math/math_suite.h"

namespace {

// A field of /proc/self/status in bytes (the kernel prints kB).
std::size_t status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0) return std::stoull(line.substr(n + 1)) * 1024;
  return 0;
}

struct Limit {
  const char* kind;  // "nodes" or "bytes"
  std::size_t value;
};

using MathRunner = tensat::Runner<math::Math, math::ConstantFold>;

// The workload, on a runner whose limits are set: the 7 expressions, egg's math rules.
void run_workload(MathRunner& runner, bool backoff) {
  if (!backoff) runner.with_scheduler(tensat::SimpleScheduler<>());
  for (const std::string& e : math::ematching_bench_exprs())
    runner.with_expr(tensat::parse_expr<math::Math>(e));
  runner.run(math::rules());
}

void run_one(const Limit& limit, bool backoff) {
  malloc_trim(0);
  { std::ofstream("/proc/self/clear_refs") << "5"; }
  const std::size_t rss_before = status_bytes("VmRSS:");
  const auto start = std::chrono::steady_clock::now();

  MathRunner runner;
  runner.with_iter_limit(1000).with_time_limit(std::chrono::duration<double>(600.0));
  runner.with_node_limit(std::strcmp(limit.kind, "nodes") == 0 ? limit.value : 100'000'000);
  if (std::strcmp(limit.kind, "bytes") == 0) runner.with_memory_limit(limit.value);
  run_workload(runner, backoff);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::size_t peak = status_bytes("VmHWM:");
  const auto& g = runner.egraph();
  const std::size_t nodes = g.total_size();
  const std::size_t bytes = g.memory_usage();
  const std::size_t reached = std::strcmp(limit.kind, "nodes") == 0 ? nodes : bytes;
  std::printf("| %s | %zu | %s | %zu | %zu | %.2f | %zu | %.2f | %.2f | %.2f |\n", limit.kind,
              limit.value, runner.stop_reason()->to_string().c_str(), runner.iterations().size(),
              reached, static_cast<double>(reached) / static_cast<double>(limit.value), nodes,
              static_cast<double>(bytes) / 1048576.0,
              static_cast<double>(peak - rss_before) / 1048576.0, seconds);
}

int ilp_limits(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  std::printf(
      "| file | limit ms | slowest of 5 ms | slowest / limit | status | CBC killed |\n"
      "|---|---|---|---|---|---|\n");
  for (int a = 2; a < argc; ++a) {
    const tensat::ExtractionGraph graph =
        tensat::to_extraction_graph(tensat::read_egraph_json(argv[a]));
    std::string name = argv[a];
    name = name.substr(name.find_last_of('/') + 1);
    for (double limit : {0.005, 0.02, 0.1, 0.5}) {
      tensat::IlpOptions options;
      options.time_limit_seconds = limit;
      double slowest = 0;
      bool killed = false;
      tensat::ExtractionStatus status = tensat::ExtractionStatus::Optimal;
      for (int run = 0; run < 5; ++run) {
        const auto start = Clock::now();
        const tensat::Extraction e = tensat::extract_ilp(graph, options);
        slowest = std::max(slowest, std::chrono::duration<double>(Clock::now() - start).count());
        killed = killed || e.note.find("killed") != std::string::npos;
        if (e.status != tensat::ExtractionStatus::Optimal) status = e.status;
      }
      std::printf("| %s | %g | %.2f | %.2f | %s | %s |\n", name.c_str(), limit * 1e3, slowest * 1e3,
                  slowest / limit,
                  status == tensat::ExtractionStatus::Optimal ? "optimal" : "feasible",
                  killed ? "yes" : "no");
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--ilp") == 0) return ilp_limits(argc, argv);
  const bool backoff = argc > 1 && std::strcmp(argv[1], "--backoff") == 0;
  // Backoff grows the e-graph slowly (hundreds of iterations to a million nodes): its list
  // stops where a run still takes seconds.
  std::vector<Limit> limits = {{"nodes", 10'000}, {"nodes", 50'000}, {"nodes", 200'000}};
  if (!backoff) limits.push_back({"nodes", 1'000'000});
  for (std::size_t mib : {1, 4, 16}) limits.push_back({"bytes", mib << 20});
  if (!backoff) limits.push_back({"bytes", std::size_t(64) << 20});
  // One small run first, in this process: the code the workload runs is then resident (its
  // pages shared with every child), so a child's RSS growth is the data it allocates, not the
  // first touch of the program's text (about 0.3 MiB).
  {
    MathRunner warmup;
    warmup.with_iter_limit(1000).with_memory_limit(std::size_t(256) << 10);
    run_workload(warmup, backoff);
  }
  std::printf("scheduler: %s\n\n", backoff ? "BackoffScheduler" : "SimpleScheduler");
  std::printf(
      "| limit | value | stop | iterations | reached | reached / limit | nodes | e-graph MiB | "
      "peak RSS growth MiB | seconds |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (const Limit& limit : limits) {
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      run_one(limit, backoff);
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::printf("| %s | %zu | child failed |\n", limit.kind, limit.value);
      return 1;
    }
  }
  return 0;
}
