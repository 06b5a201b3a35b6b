// Forward declarations of tensat's core types, for headers that only name them.
#ifndef TENSAT_FWD_H
#define TENSAT_FWD_H

namespace tensat {
inline namespace v0 {

// Default template arguments live here, in the first declaration, so that every header that
// defines one of these classes includes this file and `Rewrite<L>` means `Rewrite<L, NoAnalysis>`.

struct Id;
class Symbol;
class SymbolLang;
class Var;
class Subst;
struct SearchMatches;
struct NoAnalysis;
struct DidMerge;
template <class N>
class RecExpr;
template <class L>
class ENodeOrVar;
template <class L, class A = NoAnalysis>
class EGraph;
template <class L>
class Pattern;
template <class L>
class MultiPattern;
template <class L, class A = NoAnalysis>
class Searcher;
template <class L, class A = NoAnalysis>
class Applier;
template <class L, class A = NoAnalysis>
class Condition;
template <class L, class A = NoAnalysis>
class Rewrite;
template <class L, class A = NoAnalysis>
class RuleSet;
template <class L, class A = NoAnalysis>
class Scheduler;
template <class L, class A = NoAnalysis>
class Runner;
template <class L = void, class A = NoAnalysis>  // <>: language-independent settings
class SimpleScheduler;
template <class L = void, class A = NoAnalysis>
class BackoffScheduler;
template <class L, class A = NoAnalysis>
class RewriteRule;
template <class L, class A = NoAnalysis>
class ConditionEqual;
struct StopReason;
struct Iteration;
struct Report;
struct AstSize;
struct AstDepth;
template <class L, class A, class CF>
class TreeExtractor;

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_FWD_H
