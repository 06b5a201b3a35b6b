#include "tensat/exec/detail/kernels.h"
