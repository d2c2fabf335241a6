// The version of TorchScan Dispatch, reported as context.torchscan_version
// (python/torchscan_dispatch/_version.py must agree; a test checks).

#ifndef TORCHSCAN_TORCHSCAN_VERSION_H_
#define TORCHSCAN_TORCHSCAN_VERSION_H_

namespace torchscan {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_VERSION_H_
