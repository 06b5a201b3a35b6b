// The CBC backend of the exact DAG extractor: the integer program of the design note solved by
// COIN-OR CBC through its C interface, with lazy cycle cuts and a level-variable fallback.
// Compiled only when CMake found CBC (it then defines TENSAT_HAS_CBC=1 on tensat::tensat).
#ifndef TENSAT_EXTRACT_CBC_H
#define TENSAT_EXTRACT_CBC_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensat/extract/dag_problem.h"

#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
#include <Cbc_C_Interface.h>
#endif

// Where fork() exists, CBC runs in a child process (see detail::run_in_child).
#if defined(__unix__) || defined(__APPLE__)
#define TENSAT_HAS_FORK 1
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#else
#define TENSAT_HAS_FORK 0
#endif

namespace tensat {
inline namespace v0 {

/// Whether this build can use CBC (`IlpBackend::Cbc`).
#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC
inline constexpr bool kHaveCbc = true;
#else
inline constexpr bool kHaveCbc = false;
#endif

namespace detail {

/// The rows and columns of the DAG-extraction integer program over a DagProblem, kept apart
/// from the solver so that the cycle cuts of one round carry over to the next:
///   columns: x_n ∈ {0,1} per node (objective: its cost), a_c ∈ [0,1] per class (integral
///            because a_c = Σ x_n), and t_c ∈ [0, M−1] per class of a cyclic strongly connected
///            component once level variables are switched on;
///   (1) Σ_{n∈c} x_n − a_c = 0            one node per used class
///   (2) Σ_{n∈c, k∈ch(n)} x_n − a_k ≤ 0    a chosen node needs each of its child classes
///   (3) a_r = 1                          roots are used (column bounds)
///   (4) a_c − Σ_{n: c∈ch(n)} x_n ≤ 0     a non-root class needs a user (negative costs only:
///                                        otherwise leaving a class out never costs more)
///   (5) Σ_i Σ_{n∈c_i, c_{i+1}∈ch(n)} x_n ≤ k−1   per cycle found in a solution (lazy)
///   (6) t_c − t_k − M·x_n ≥ 1 − M         levels: for n∈c, k∈ch(n) in c's component
struct DagIlpRows {
  struct Row {
    std::vector<int> columns;
    std::vector<double> values;
    double lower, upper;
  };
  std::vector<Row> rows;
};

/// A DagSolution as bytes (for the pipe from a child process) and back. `decode_solution`
/// returns false, leaving `out` alone, on bytes that are not a solution of a problem with
/// `num_classes` classes and `num_nodes` nodes.
inline std::string encode_solution(const DagSolution& s) {
  const std::uint64_t count = s.choice.size();
  const std::uint8_t optimal = s.optimal ? 1 : 0;
  std::string bytes(sizeof count + count * sizeof(std::uint32_t) + 2 * sizeof(double) + 1, '\0');
  char* at = bytes.data();
  auto put = [&](const void* data, std::size_t size) {
    if (size != 0) std::memcpy(at, data, size);
    at += size;
  };
  put(&count, sizeof count);
  put(s.choice.data(), count * sizeof(std::uint32_t));
  put(&s.cost, sizeof s.cost);
  put(&s.lower_bound, sizeof s.lower_bound);
  put(&optimal, 1);
  return bytes;
}

inline bool decode_solution(const std::string& bytes, std::size_t num_classes,
                            std::size_t num_nodes, DagSolution& out) {
  std::uint64_t count = 0;
  if (bytes.size() < sizeof count) return false;
  std::memcpy(&count, bytes.data(), sizeof count);
  if ((count != 0 && count != num_classes) ||
      bytes.size() != sizeof count + count * sizeof(std::uint32_t) + 2 * sizeof(double) + 1)
    return false;
  DagSolution s;
  s.choice.resize(count);
  const char* at = bytes.data() + sizeof count;
  if (count != 0) std::memcpy(s.choice.data(), at, count * sizeof(std::uint32_t));
  at += count * sizeof(std::uint32_t);
  std::memcpy(&s.cost, at, sizeof s.cost);
  std::memcpy(&s.lower_bound, at + sizeof s.cost, sizeof s.lower_bound);
  s.optimal = at[2 * sizeof(double)] != 0;
  for (std::uint32_t n : s.choice)
    if (n != DagProblem::kNone && n >= num_nodes) return false;
  out = std::move(s);
  return true;
}

/// How a `run_in_child` ended.
struct ChildRun {
  std::string message;    ///< the last complete message the child sent; empty if none
  bool finished = false;  ///< it sent a final message and exited normally
  std::string failure;    ///< otherwise why, in one line: signal, exit status, killed, …
};

#if TENSAT_HAS_FORK

/// Children killed and not yet reaped. A killed child's teardown takes milliseconds on a large
/// address space; `run_in_child` does not wait for it but reaps it, without waiting, at its next
/// call (a zombie until then holds no memory).
class KilledChildren {
 public:
  void add(pid_t pid) {
    std::lock_guard<std::mutex> lock(mutex_);
    pids_.push_back(pid);
  }
  void reap() {
    std::lock_guard<std::mutex> lock(mutex_);
    pids_.erase(std::remove_if(pids_.begin(), pids_.end(),
                               [](pid_t pid) {
                                 const pid_t done = ::waitpid(pid, nullptr, WNOHANG);
                                 return done == pid || (done < 0 && errno == ECHILD);
                               }),
                pids_.end());
  }
  [[nodiscard]] std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return pids_.size();
  }

 private:
  std::mutex mutex_;
  std::vector<pid_t> pids_;
};

inline KilledChildren& killed_children() {
  static KilledChildren children;
  return children;
}

/// Runs `work(send)` in a forked child process, so that a library that crashes or aborts (CBC
/// does: see cbc.md) cannot take this process down. The child calls `send(bytes, final)` to
/// pass a message back through a pipe (the parent keeps the last complete one; a final message
/// says the work is done), then leaves with `_exit` (no atexit handlers, no stdio flush: the
/// parent's buffers are not written twice). Its stdout goes to /dev/null and its stderr is
/// captured: the failure line quotes it (an assertion's message). The parent waits until the
/// child exits or `kill_at`, then kills it (SIGKILL) and returns without waiting for its
/// teardown (see `KilledChildren`): a child that hangs, e.g. on a lock another thread of the
/// parent held at the fork, costs no more than the time limit. An exception
/// thrown by `work` ends the child with its message as the failure. The child is a copy of a
/// possibly multi-threaded process with one thread: `work` must only compute and call `send`.
template <class Work>
ChildRun run_in_child(Work&& work, std::chrono::steady_clock::time_point kill_at) {
  using Clock = std::chrono::steady_clock;
  ChildRun run;
  killed_children().reap();
  int data[2], err[2];
  if (::pipe(data) != 0) {
    run.failure = std::string("cannot create a pipe: ") + std::strerror(errno);
    return run;
  }
  if (::pipe(err) != 0) {
    run.failure = std::string("cannot create a pipe: ") + std::strerror(errno);
    ::close(data[0]);
    ::close(data[1]);
    return run;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    run.failure = std::string("cannot start a child process: ") + std::strerror(errno);
    for (int fd : {data[0], data[1], err[0], err[1]}) ::close(fd);
    return run;
  }
  if (pid == 0) {  // the child
    ::close(data[0]);
    ::close(err[0]);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    auto write_all = [](int fd, const char* bytes, std::size_t size) {
      while (size > 0) {
        const ssize_t n = ::write(fd, bytes, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(4);
        bytes += n;
        size -= static_cast<std::size_t>(n);
      }
    };
    // A message: a tag ('P'rogress or 'F'inal), its length (8 bytes), its bytes.
    auto send = [&](const std::string& bytes, bool final) {
      std::string frame(1 + sizeof(std::uint64_t), final ? 'F' : 'P');
      const std::uint64_t size = bytes.size();
      std::memcpy(&frame[1], &size, sizeof size);
      frame += bytes;
      write_all(data[1], frame.data(), frame.size());
    };
    int code = 0;
    try {
      work(send);
    } catch (const std::exception& e) {
      write_all(STDERR_FILENO, e.what(), std::strlen(e.what()));
      code = 3;
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }
  ::close(data[1]);
  ::close(err[1]);
  for (int fd : {data[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  std::string received, errors;  // bytes not yet parsed; the child's stderr (its end)
  auto drain = [&](int fd, std::string& into, std::size_t keep) {  // false at end of file
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        into.append(buffer, static_cast<std::size_t>(n));
        if (into.size() > 2 * keep) into.erase(0, into.size() - keep);  // the last `keep` bytes
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0;  // EAGAIN: open, nothing to read now
    }
  };
  auto parse = [&] {
    constexpr std::size_t header = 1 + sizeof(std::uint64_t);
    std::size_t at = 0;
    while (received.size() - at >= header) {
      std::uint64_t size = 0;
      std::memcpy(&size, received.data() + at + 1, sizeof size);
      if (received.size() - at - header < size) break;
      run.message = received.substr(at + header, size);
      run.finished = received[at] == 'F';
      at += header + size;
    }
    received.erase(0, at);
  };
  // All of the messages; the end of stderr, where an assertion or a sanitizer's report is.
  constexpr std::size_t kAll = static_cast<std::size_t>(-1) / 4, kErrorTail = 64 * 1024;
  bool data_open = true, err_open = true, killed = false;
  int status = 0;
  while (!killed) {
    // Wake at least every 20 ms to look for the child's exit: a pipe can stay open after it,
    // when another thread's child inherited its write end.
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now()).count();
    pollfd fds[2] = {{data_open ? data[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left, 20)));
    ::poll(fds, 2, wait_ms);
    if (data_open) data_open = drain(data[0], received, kAll);
    if (err_open) err_open = drain(err[0], errors, kErrorTail);
    parse();
    // Both pipes at their end: every write end is closed, the child's too, so it has exited.
    const pid_t done = ::waitpid(pid, &status, data_open || err_open ? WNOHANG : 0);
    if (done == pid) break;
    if (done < 0 && errno == ECHILD) {  // SIGCHLD ignored by this process: no status to read
      status = run.finished ? 0 : -1;
      break;
    }
    if (Clock::now() >= kill_at) {
      ::kill(pid, SIGKILL);
      if (::waitpid(pid, &status, WNOHANG) != pid) killed_children().add(pid);
      killed = true;
    }
  }
  if (data_open) drain(data[0], received, kAll);
  if (err_open) drain(err[0], errors, kErrorTail);
  parse();
  ::close(data[0]);
  ::close(err[0]);

  // The child's own words: an assertion or a sanitizer's error line, else its first line.
  std::string said;
  for (std::size_t at = 0; at < errors.size();) {
    std::size_t end = errors.find('\n', at);
    if (end == std::string::npos) end = errors.size();
    const std::string line = errors.substr(at, end - at);
    at = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const bool telling =
        line.find("Assertion") != std::string::npos || line.find("ERROR") != std::string::npos;
    if (said.empty() || telling) said = line.substr(0, 200);
    if (telling) break;
  }
  auto with_words = [&](std::string what) { return said.empty() ? what : what + ": " + said; };
  if (killed) {
    run.finished = false;
    run.failure = "still running at the time limit, killed";
  } else if (status >= 0 && WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sig == SIGSEGV   ? "SIGSEGV"
                       : sig == SIGABRT ? "SIGABRT"
                       : sig == SIGBUS  ? "SIGBUS"
                       : sig == SIGFPE  ? "SIGFPE"
                       : sig == SIGILL  ? "SIGILL"
                       : sig == SIGKILL ? "SIGKILL"
                                        : nullptr;
    run.finished = false;
    run.failure = with_words(name ? std::string("crashed (") + name + ")"
                                  : "killed by signal " + std::to_string(sig));
  } else if (status < 0 || WEXITSTATUS(status) != 0) {
    run.finished = false;
    run.failure =
        with_words(status < 0 ? std::string("ended without a result")
                              : "exited with status " + std::to_string(WEXITSTATUS(status)));
  } else if (!run.finished) {
    run.failure = with_words("exited without a result");
  }
  return run;
}

#endif  // TENSAT_HAS_FORK

#if defined(TENSAT_HAS_CBC) && TENSAT_HAS_CBC

/// Strongly connected components of the class graph of `p` (Tarjan, iterative); returns the
/// component of each class and, through `cyclic`, whether each component has a cycle.
inline std::vector<std::uint32_t> class_components(const DagProblem& p, std::vector<bool>& cyclic) {
  const auto n = static_cast<std::uint32_t>(p.num_classes());
  constexpr std::uint32_t kUnset = DagProblem::kNone;
  std::vector<std::uint32_t> index(n, kUnset), low(n, 0), component(n, kUnset), stack;
  std::vector<bool> on_stack(n, false);
  // Successors of a class: the child classes of its nodes, visited through (node, child) cursors.
  struct Frame {
    std::uint32_t c, node_pos, child_pos;
  };
  std::vector<Frame> frames;
  std::uint32_t counter = 0, components = 0;
  for (std::uint32_t start = 0; start < n; ++start) {
    if (index[start] != kUnset) continue;
    frames.push_back({start, 0, 0});
    index[start] = low[start] = counter++;
    stack.push_back(start);
    on_stack[start] = true;
    while (!frames.empty()) {
      Frame& f = frames.back();
      const auto members = p.nodes(f.c);
      if (f.node_pos < members.size()) {
        const auto kids = p.children(members[f.node_pos]);
        if (f.child_pos == kids.size()) {
          ++f.node_pos;
          f.child_pos = 0;
          continue;
        }
        const std::uint32_t k = kids[f.child_pos++];
        if (index[k] == kUnset) {
          index[k] = low[k] = counter++;
          stack.push_back(k);
          on_stack[k] = true;
          frames.push_back({k, 0, 0});
        } else if (on_stack[k]) {
          low[f.c] = std::min(low[f.c], index[k]);
        }
        continue;
      }
      const std::uint32_t c = f.c;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().c] = std::min(low[frames.back().c], low[c]);
      if (low[c] != index[c]) continue;
      std::uint32_t size = 0, k;
      do {
        k = stack.back();
        stack.pop_back();
        on_stack[k] = false;
        component[k] = components;
        ++size;
      } while (k != c);
      cyclic.push_back(size > 1);
      ++components;
    }
  }
  return component;
}

/// Solves `p` with CBC: solve, look for cycles among the chosen classes, add a cut per cycle,
/// solve again; after `cycle_cut_rounds` rounds, level variables rule out every cycle at once.
/// Each round starts from the best acyclic solution so far (MIP start), initially `start` (a
/// reduced choice, or empty). Returns the best acyclic solution, optimal when CBC proved the
/// final model optimal and its solution is acyclic; `progress`, if set, sees each better one.
/// In-process: CBC's failures (below) take the process down; `solve_cbc_contained` does not.
/// Costs go to CBC as they are, and Clp aborts on one of magnitude 1e25 or more: `extract_ilp`
/// scales them down first.
inline DagSolution solve_cbc(const DagProblem& p, const DagSolution& start,
                             std::chrono::steady_clock::time_point deadline, int cycle_cut_rounds,
                             int threads,
                             const std::function<void(const DagSolution&)>& progress = {}) {
  using Clock = std::chrono::steady_clock;
  const int n_nodes = static_cast<int>(p.num_nodes()),
            n_classes = static_cast<int>(p.num_classes());
  auto x = [](std::uint32_t node) { return static_cast<int>(node); };
  auto a = [&](std::uint32_t c) { return n_nodes + static_cast<int>(c); };
  std::vector<bool> is_root(p.num_classes(), false);
  for (std::uint32_t r : p.roots) is_root[r] = true;

  DagIlpRows base, cuts;
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    DagIlpRows::Row row{{}, {}, 0.0, 0.0};
    for (std::uint32_t node : p.nodes(c)) {
      row.columns.push_back(x(node));
      row.values.push_back(1.0);
    }
    row.columns.push_back(a(c));
    row.values.push_back(-1.0);
    base.rows.push_back(std::move(row));
  }
  // (2), aggregated per (class, child class): Σ_{n∈c, k∈ch(n)} x_n ≤ a_k. At most one node of c
  // is chosen, so this is the same set of integer solutions as one row per (node, child) with a
  // quarter to a half of the rows; its LP is weaker, but CBC proves hard instances faster with it.
  std::vector<int> row_of(p.num_classes(), -1);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    std::vector<std::uint32_t> touched;
    for (std::uint32_t node : p.nodes(c))
      for (std::uint32_t k : p.children(node)) {
        if (row_of[k] < 0) {
          row_of[k] = static_cast<int>(base.rows.size());
          base.rows.push_back({{a(k)}, {-1.0}, -1e30, 0.0});
          touched.push_back(k);
        }
        base.rows[row_of[k]].columns.push_back(x(node));
        base.rows[row_of[k]].values.push_back(1.0);
      }
    for (std::uint32_t k : touched) row_of[k] = -1;
  }
  if (!p.nonnegative) {
    std::vector<DagIlpRows::Row> needs_user(p.num_classes(), DagIlpRows::Row{{}, {}, -1e30, 0.0});
    for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
      needs_user[c].columns.push_back(a(c));
      needs_user[c].values.push_back(1.0);
    }
    for (std::uint32_t node = 0; node < p.num_nodes(); ++node)
      for (std::uint32_t k : p.children(node)) {
        needs_user[k].columns.push_back(x(node));
        needs_user[k].values.push_back(-1.0);
      }
    for (std::uint32_t c = 0; c < p.num_classes(); ++c)
      if (!is_root[c]) base.rows.push_back(std::move(needs_user[c]));
  }

  std::vector<std::uint32_t> best = start.choice;
  double best_cost = start.choice.empty() ? std::numeric_limits<double>::infinity() : start.cost;
  DagSolution result;
  result.lower_bound = start.lower_bound;
  for (int round = 0;; ++round) {
    const bool levels = round >= cycle_cut_rounds;
    const double seconds = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (seconds <= 0) break;
    std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
    Cbc_Model* m = model.get();
    for (std::uint32_t node = 0; node < p.num_nodes(); ++node)
      Cbc_addCol(m, "", 0.0, 1.0, p.cost[node], 1, 0, nullptr, nullptr);
    for (std::uint32_t c = 0; c < p.num_classes(); ++c)
      Cbc_addCol(m, "", is_root[c] ? 1.0 : 0.0, 1.0, 0.0, 0, 0, nullptr, nullptr);
    auto add_rows = [&](const DagIlpRows& rows) {
      for (const auto& row : rows.rows)
        Cbc_addRow(
            m, "", static_cast<int>(row.columns.size()), row.columns.data(), row.values.data(),
            row.lower <= -1e30 ? 'L'
                               : (row.upper >= 1e30 ? 'G' : (row.lower == row.upper ? 'E' : 'L')),
            row.lower <= -1e30 ? row.upper : row.lower);
    };
    add_rows(base);
    add_rows(cuts);
    if (levels) {
      std::vector<bool> cyclic;
      const auto component = class_components(p, cyclic);
      std::vector<std::uint32_t> size(cyclic.size(), 0);
      for (std::uint32_t c = 0; c < p.num_classes(); ++c) ++size[component[c]];
      std::vector<int> level(p.num_classes(), -1);
      for (std::uint32_t c = 0; c < p.num_classes(); ++c)
        if (cyclic[component[c]]) {
          level[c] = n_nodes + n_classes + static_cast<int>(c);
        }
      // Level columns exist for every class (unused ones fixed at 0) so indices stay simple.
      for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
        const double top = level[c] >= 0 ? static_cast<double>(size[component[c]]) : 0.0;
        Cbc_addCol(m, "", 0.0, top, 0.0, 0, 0, nullptr, nullptr);
      }
      for (std::uint32_t node = 0; node < p.num_nodes(); ++node) {
        const std::uint32_t c = p.node_class[node];
        if (level[c] < 0) continue;
        const double big = static_cast<double>(size[component[c]]) + 1.0;
        for (std::uint32_t k : p.children(node)) {
          if (component[k] != component[c]) continue;
          const int columns[3] = {level[c], level[static_cast<std::size_t>(k)], x(node)};
          const double values[3] = {1.0, -1.0, -big};
          Cbc_addRow(m, "", 3, columns, values, 'G', 1.0 - big);
        }
      }
    }
    Cbc_setLogLevel(m, 0);
    Cbc_setParameter(m, "timeMode", "elapsed");
    if (threads > 1) Cbc_setParameter(m, "threads", std::to_string(threads).c_str());
    Cbc_setMaximumSeconds(m, seconds);
    Cbc_setAllowableGap(m, 1e-9);
    Cbc_setAllowableFractionGap(m, 1e-9);
    if (!best.empty()) {
      std::vector<int> columns;
      std::vector<double> values;
      for (std::uint32_t node = 0; node < p.num_nodes(); ++node) {
        columns.push_back(x(node));
        values.push_back(best[p.node_class[node]] == node ? 1.0 : 0.0);
      }
      for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
        columns.push_back(a(c));
        values.push_back(best[c] != DagProblem::kNone ? 1.0 : 0.0);
      }
      Cbc_setMIPStartI(m, static_cast<int>(columns.size()), columns.data(), values.data());
    }
    Cbc_solve(m);
    // A bound from an abandoned or infeasible run is meaningless (the model always has the
    // incumbent or a relaxation of it as a solution, so neither should happen).
    if (!Cbc_isAbandoned(m) && !Cbc_isProvenInfeasible(m))
      result.lower_bound = std::max(result.lower_bound, Cbc_getBestPossibleObjValue(m));
    const double* solution = Cbc_bestSolution(m);
    if (solution == nullptr) break;  // no solution and no start: give up with the bound alone
    if (!best.empty() &&
        result.lower_bound >= best_cost - 1e-9 * std::max(1.0, std::abs(best_cost))) {
      result.optimal = true;  // the relaxation cannot beat the incumbent, whatever it chose
      break;
    }
    std::vector<std::uint32_t> choice(p.num_classes(), DagProblem::kNone);
    for (std::uint32_t node = 0; node < p.num_nodes(); ++node)
      if (solution[x(node)] > 0.5) choice[p.node_class[node]] = node;
    // One walk from the roots: the DAG cost of the solution, and whether it is usable at all —
    // CBC 2.10 can hand back an infeasible iterate after a time-limited stop (coin-or/Cbc#353),
    // so a solution counts only if every class it needs has a node.
    bool complete = true;
    double cost = 0;
    {
      std::vector<bool> seen(p.num_classes(), false);
      std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
      while (!stack.empty() && complete) {
        const std::uint32_t c = stack.back();
        stack.pop_back();
        if (seen[c]) continue;
        seen[c] = true;
        if (choice[c] == DagProblem::kNone) {
          complete = false;
          continue;
        }
        cost += p.cost[choice[c]];
        for (std::uint32_t k : p.children(choice[c])) stack.push_back(k);
      }
    }
    if (!complete) break;
    // Cycles among the chosen classes, one per pass: a found cycle's classes are set aside for
    // the next pass so that disjoint cycles are all cut in this round.
    bool acyclic = true;
    std::vector<std::uint32_t> trimmed = choice;
    for (int found = 0; found < 64; ++found) {
      const auto cycle = p.find_cycle(trimmed);
      if (cycle.empty()) break;
      acyclic = false;
      DagIlpRows::Row cut{{}, {}, -1e30, static_cast<double>(cycle.size()) - 1.0};
      for (std::size_t i = 0; i < cycle.size(); ++i) {
        const std::uint32_t from = cycle[i], to = cycle[(i + 1) % cycle.size()];
        for (std::uint32_t node : p.nodes(from)) {
          const auto kids = p.children(node);
          if (std::find(kids.begin(), kids.end(), to) != kids.end()) {
            cut.columns.push_back(x(node));
            cut.values.push_back(1.0);
          }
        }
      }
      cuts.rows.push_back(std::move(cut));
      // Cut the cycle out of the search for further ones: its first class gets no children.
      const std::uint32_t leaf = cycle.front();
      std::uint32_t childless = DagProblem::kNone;
      for (std::uint32_t node : p.nodes(leaf))
        if (p.children(node).empty()) childless = node;
      if (childless == DagProblem::kNone) break;  // no way to cut it out: one cut per round
      trimmed[leaf] = childless;
    }
    if (acyclic) {
      if (cost < best_cost) {
        best_cost = cost;
        best = choice;
        if (progress)
          progress(DagSolution{best, best_cost, std::min(result.lower_bound, best_cost), false});
      }
      if (Cbc_isProvenOptimal(m)) {
        result.optimal = true;
        result.lower_bound = best_cost;
        break;
      }
      if (levels) break;  // out of time with the complete model
    }
    if (Clock::now() >= deadline) break;
  }
  result.choice = std::move(best);
  result.cost = best_cost;
  if (!result.optimal) result.lower_bound = std::min(result.lower_bound, best_cost);
  return result;
}

/// What `solve_cbc_contained` returns: CBC's solution, or when CBC failed, the best solution
/// it reported before (else the start) and why it failed.
struct CbcRun {
  DagSolution solution;
  std::string failure;  ///< empty when CBC ran to its end
};

/// `solve_cbc` where CBC's failures cannot take the process down. CBC 2.10 (Debian's, built
/// with assertions) segfaults in CglPreProcess::postProcess when its time limit stops a run,
/// aborts in Clp on an objective coefficient of magnitude 1e25 or more, and with several
/// threads aborts in ClpNonLinearCost (coin-or/Clp#173). Where fork() exists, CBC runs in a
/// child process (`run_in_child`) that reports each better solution back and is killed at
/// `kill_at`; elsewhere it runs in-process and only its exceptions are caught.
inline CbcRun solve_cbc_contained(const DagProblem& p, const DagSolution& start,
                                  std::chrono::steady_clock::time_point deadline,
                                  std::chrono::steady_clock::time_point kill_at,
                                  int cycle_cut_rounds, int threads) {
  CbcRun run{start, {}};
  run.solution.optimal = false;
  if (std::chrono::steady_clock::now() >= deadline) return run;  // no time: no child to start
#if TENSAT_HAS_FORK
  const ChildRun child = run_in_child(
      [&](const auto& send) {
        const auto report = [&](const DagSolution& s) { send(encode_solution(s), false); };
        send(encode_solution(solve_cbc(p, start, deadline, cycle_cut_rounds, threads, report)),
             true);
      },
      kill_at);
  DagSolution reported;
  if (!child.message.empty() &&
      decode_solution(child.message, p.num_classes(), p.num_nodes(), reported)) {
    if (!child.finished) reported.optimal = false;
    run.solution = std::move(reported);
  } else if (child.failure.empty()) {
    run.failure = "its result could not be read";
  }
  if (!child.failure.empty()) run.failure = child.failure;
#else
  (void)kill_at;
  try {
    run.solution = solve_cbc(p, start, deadline, cycle_cut_rounds, threads);
  } catch (const std::exception& e) {
    run.failure = e.what();
  }
#endif
  return run;
}

#endif  // TENSAT_HAS_CBC

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXTRACT_CBC_H
