// Hostile pattern shapes (issue 31): very deep and very wide patterns compile in time about
// linear in their size and match without exhausting the stack.
#include <catch2/catch.hpp>

#include <pthread.h>

#include <exception>
#include <optional>
#include <string>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using tensat::Pattern;
using tensat::Var;
using L = tensat::SymbolLang;

namespace {
// `(f (f ... (f leaf)))` with `depth` f's.
std::string chain(std::size_t depth, const std::string& leaf) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += "(f ";
  text += leaf;
  text.append(depth, ')');
  return text;
}

// Runs `f` on a thread with a 256 KiB stack (worker threads often have small ones), so that a
// recursion as deep as the pattern overflows in any build, not only in instrumented ones.
// Exceptions are carried back.
template <class F>
void on_small_stack(F f) {
  struct Call {
    F* f;
    std::exception_ptr error;
    static void* run(void* arg) {
      auto* call = static_cast<Call*>(arg);
      try {
        (*call->f)();
      } catch (...) {
        call->error = std::current_exception();
      }
      return nullptr;
    }
  } call{&f, nullptr};
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, &Call::run, &call) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  if (call.error) std::rethrow_exception(call.error);
}
}  // namespace

TEST_CASE("deep pattern: a 20000-deep chain compiles and matches (no recursion on its depth)") {
  constexpr std::size_t kDepth = 20'000;
  EGraph<L> egraph;
  const Id root = egraph.add_expr(tensat::parse_expr<L>(chain(kDepth, "x")));
  const Id x = egraph.add_expr(tensat::parse_expr<L>("x"));
  egraph.rebuild();

  // Searched from the root only: searching every class of the chain is quadratic by nature.
  const Pattern<L> pattern(chain(kDepth, "?x"));
  CHECK(pattern.program().num_instructions() == kDepth);  // one Bind per f, ?x is free
  std::optional<tensat::SearchMatches> match;
  on_small_stack([&] { match = pattern.search_eclass(egraph, root); });
  REQUIRE(match);
  REQUIRE(match->substs.size() == 1);
  CHECK(match->substs[0]["?x"] == egraph.find(x));

  // One f more than the term: no match; the ground form of the chain: a single lookup.
  CHECK_FALSE(Pattern<L>(chain(kDepth + 1, "?x")).search_eclass(egraph, root));
  const Pattern<L> ground(chain(kDepth, "x"));
  CHECK(ground.program().num_instructions() == 1);
  CHECK(ground.search_eclass(egraph, root));

  // Copying recompiles; printing and instantiating are iterative too.
  const Pattern<L> copy = pattern;
  CHECK(copy.search_eclass(egraph, root));
  CHECK(copy.to_string() == chain(kDepth, "?x"));
  CHECK(pattern.instantiate(egraph, match->substs[0]) == egraph.find(root));
}

TEST_CASE("deep pattern: a 20000-deep chain matches a cycle of one class") {
  // x = (f x): the chain matches in that class alone, through 20000 nested Binds.
  EGraph<L> egraph;
  const Id x = egraph.add_expr(tensat::parse_expr<L>("x"));
  egraph.unite(x, egraph.add(L("f", {x})));
  egraph.rebuild();
  std::vector<tensat::SearchMatches> matches;
  on_small_stack([&] { matches = Pattern<L>(chain(20'000, "?y")).search(egraph); });
  REQUIRE(matches.size() == 1);
  REQUIRE(matches[0].substs.size() == 1);
  CHECK(matches[0].substs[0]["?y"] == egraph.find(x));
}

TEST_CASE("deep pattern: a deep chain with a new variable at every level") {
  // (g ?v0 (g ?v1 ... (g ?vN a))): every level binds a variable; the variables' count is not
  // tracked exactly beyond a few, which may change the order of instructions, never the match.
  constexpr std::size_t kDepth = 5'000;
  std::string term;
  std::string pattern_text;
  for (std::size_t i = 0; i < kDepth; ++i) {
    term += "(g c" + std::to_string(i % 7) + " ";
    pattern_text += "(g ?v" + std::to_string(i) + " ";
  }
  term += "a" + std::string(kDepth, ')');
  pattern_text += "a" + std::string(kDepth, ')');
  EGraph<L> egraph;
  const Id root = egraph.add_expr(tensat::parse_expr<L>(term));
  egraph.rebuild();
  const Pattern<L> pattern(pattern_text);
  CHECK(pattern.vars().size() == kDepth);
  const auto match = pattern.search_eclass(egraph, root);
  REQUIRE(match);
  REQUIRE(match->substs.size() == 1);
  CHECK(match->substs[0].size() == kDepth);
  CHECK(
      match->substs[0][Var("?v" + std::to_string(kDepth - 1))] ==
      egraph.find(egraph.add_expr(tensat::parse_expr<L>("c" + std::to_string((kDepth - 1) % 7)))));
}

TEST_CASE("deep pattern: a 20000-wide pattern with a repeated variable") {
  // (h (k ?x) (k ?x) ...): the first (k ?x) binds ?x, the others are ground lookups.
  constexpr std::size_t kWidth = 20'000;
  std::string term = "(h";
  std::string pattern_text = "(h";
  for (std::size_t i = 0; i < kWidth; ++i) {
    term += " (k y)";
    pattern_text += " (k ?x)";
  }
  term += ")";
  pattern_text += ")";
  EGraph<L> egraph;
  egraph.add_expr(tensat::parse_expr<L>(term));
  egraph.rebuild();
  const Pattern<L> pattern(pattern_text);
  // Bind h, Bind the first k, then a Lookup for each other (k ?x).
  CHECK(pattern.program().num_instructions() == kWidth + 1);
  CHECK(pattern.n_matches(egraph) == 1);
}
