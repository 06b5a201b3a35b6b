// Forward declarations of tensat's core types, for headers that only name them.
#ifndef TENSAT_FWD_H
#define TENSAT_FWD_H

namespace tensat {
inline namespace v0 {

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
template <class L, class A>
class EGraph;
template <class L>
class Pattern;
template <class L>
class MultiPattern;
template <class L, class A>
class Searcher;
template <class L, class A>
class Applier;
template <class L, class A>
class Condition;
template <class L, class A>
class Rewrite;
template <class L, class A>
class RuleSet;
template <class L, class A>
class Scheduler;
template <class L, class A>
class Runner;
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
