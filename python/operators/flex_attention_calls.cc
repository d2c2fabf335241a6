// What the Python package's flex attention hook
// (python/torchscan_dispatch/_flex_attention.py) calls, through ctypes, for
// each eager call of flex attention's dense kernel: whether a measurement
// counts here, a region whose operator calls are our own work (the
// evaluation of the block mask's mask_mod), and the record of the call's
// mask exclusion (RecordFlexAttentionMask, attention_masks.h). These are C
// functions, not torchscan operators: nothing of them enters the dispatcher,
// so nothing of them can be counted. Errors cannot cross a C boundary: a
// failing call returns -1 (or nullptr).

#include <c10/core/Device.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formulas/operator_formulas.h"
#include "torchscan_dispatch/attention_masks.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// The operators whose dense kernels the Python hook sees: a record names one
// of them, never an arbitrary name.
bool IsFlexAttention(std::string_view packet) {
  return packet == "higher_order::flex_attention" ||
         packet == "higher_order::flex_attention_backward";
}

}  // namespace
}  // namespace torchscan::dispatch

using torchscan::dispatch::CountingSession;
using torchscan::dispatch::ThisThreadState;

extern "C" {

// 1 when a measurement counts on this thread and PyTorch is not compiling
// here (a call's mask is worth evaluating), else 0.
__attribute__((visibility("default"))) std::int32_t
torchscan_counting_here() noexcept {
  return CountingSession::Current() != nullptr &&
                 ThisThreadState().execution.compiling_depth == 0
             ? 1
             : 0;
}

// 1 when the current stream of `device` ("cuda:0") is being captured into a
// graph (reading a value there would break the user's capture), 0 when not
// or for the CPU, -1 for a device this build cannot ask.
__attribute__((visibility("default"))) std::int32_t torchscan_stream_capturing(
    const char* device) noexcept {
  try {
    if (device == nullptr) return -1;
    const c10::Device parsed(device);
    if (parsed.is_cpu()) return 0;
    const c10::impl::VirtualGuardImpl guard(parsed.type());
    return guard.getStream(parsed).is_capturing() ? 1 : 0;
  } catch (...) {
    return -1;
  }
}

// Operator calls from now until torchscan_exit_not_counted of the returned
// token (on this thread, innermost first) are our own work: neither the
// counting key nor a hidden region's observer sees them (NOTE [Reading
// values without being counted], call_recording.h). nullptr on failure.
__attribute__((visibility("default"))) void*
torchscan_enter_not_counted() noexcept {
  try {
    return new torchscan::dispatch::NotCounted();
  } catch (...) {
    return nullptr;
  }
}

__attribute__((visibility("default"))) void torchscan_exit_not_counted(
    void* token) noexcept {
  delete static_cast<torchscan::dispatch::NotCounted*>(token);
}

// Records the mask of one eager flex attention call of `packet`
// ("higher_order::flex_attention" or "higher_order::flex_attention_backward")
// in the measurement counting on this thread: `executed` product FLOPs over
// `all_pairs` pairs, `allowed_pairs` of them allowed; or, with
// `unread_reason` non-null, the mask was not read and the whole products
// are left out of the mask-aware count. 0 on success, -1 when nothing is
// counting here, for another name or on error.
__attribute__((visibility("default"))) std::int32_t
torchscan_record_flex_attention_mask(const char* packet, std::int64_t executed,
                                     std::int64_t all_pairs,
                                     std::int64_t allowed_pairs,
                                     const char* unread_reason) noexcept {
  try {
    CountingSession* session = CountingSession::Current();
    if (session == nullptr || packet == nullptr ||
        !torchscan::dispatch::IsFlexAttention(packet) || executed < 0 ||
        all_pairs < 0) {
      return -1;
    }
    const absl::StatusOr<torchscan::dispatch::Count> allowed =
        unread_reason == nullptr
            ? absl::StatusOr<torchscan::dispatch::Count>(allowed_pairs)
            : absl::FailedPreconditionError(unread_reason);
    // The same entry a compiled graph's call of the operator records to
    // (with the operator's formula), so both report under one name.
    const torchscan::dispatch::OperatorInfo& info =
        torchscan::dispatch::SyntheticOperatorInfo(
            packet, torchscan::formulas::FindOperatorFormula(packet), "");
    torchscan::dispatch::RecordFlexAttentionMask(info, executed, all_pairs,
                                                 allowed, *session);
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
