// Operator FLOPs of a C++ workload: the guard, MeasureFlops and per-
// measurement custom formulas (see torchscan_dispatch/flop_counting_guard.h).

#ifndef TORCHSCAN_TORCHSCAN_FLOPS_H_
#define TORCHSCAN_TORCHSCAN_FLOPS_H_

#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/flop_counting_guard.h"

#endif  // TORCHSCAN_TORCHSCAN_FLOPS_H_
