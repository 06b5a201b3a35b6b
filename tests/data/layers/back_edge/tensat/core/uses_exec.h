// A core header that includes the executor: the back edge the `layers.back_edge` test must see.
#include "tensat/exec/executor.h"
