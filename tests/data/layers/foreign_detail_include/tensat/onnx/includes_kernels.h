// Includes the exec layer's private header from the onnx layer.
#include "tensat/exec/detail/kernels.h"
