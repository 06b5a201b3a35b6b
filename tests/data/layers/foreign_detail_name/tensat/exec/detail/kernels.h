// The exec layer's private code.
namespace tensat::tensor {
namespace detail {
inline int helper(int x) { return x; }
}  // namespace detail
}  // namespace tensat::tensor
