// Peak PyTorch memory of one workload call (see
// torchscan_dispatch/peak_memory.h and docs/memory.md).

#ifndef TORCHSCAN_TORCHSCAN_MEMORY_H_
#define TORCHSCAN_TORCHSCAN_MEMORY_H_

#include "torchscan_dispatch/peak_memory.h"

#endif  // TORCHSCAN_TORCHSCAN_MEMORY_H_
