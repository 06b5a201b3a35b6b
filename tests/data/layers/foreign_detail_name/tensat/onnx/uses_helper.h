// Names the exec layer's private helper from the onnx layer (through a public include).
#include "tensat/exec/public.h"
inline int twice(int x) { return 2 * tensat::tensor::detail::helper(x); }
