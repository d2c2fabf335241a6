// TorchScan 0.2's argument ordering: the arguments of a module call in
// forward-signature order, the tuple TorchScan 0.2 hands its FLOPs formulas.
//
// The Python front end gets this from inspect.signature; the C++ front ends
// (a TorchScript method schema, a LibTorch module) describe the signature
// with a ForwardSignature and use this function, which reproduces Python's
// Signature.bind_partial + BoundArguments.apply_defaults: positional
// arguments fill positional parameters, keywords fill parameters by name,
// defaults fill the rest, *args is expanded in place, **kwargs becomes one
// mapping item, and a call that cannot be bound (an unknown keyword, too
// many positional arguments, a value given twice) falls back to positional
// arguments followed by keyword values.

#ifndef TORCHSCAN_FORMULAS_ORDERED_INPUTS_H_
#define TORCHSCAN_FORMULAS_ORDERED_INPUTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "formulas/module_call.h"

namespace torchscan::formulas {

struct ForwardParameter {
  // Python's inspect.Parameter kinds.
  enum class Kind {
    kPositionalOnly,
    kPositionalOrKeyword,
    kVarPositional,  // *args
    kKeywordOnly,
    kVarKeyword,  // **kwargs
  };
  std::string name;
  Kind kind = Kind::kPositionalOrKeyword;
  // The declared default; nullopt when the parameter has none.
  std::optional<CallValue> default_value;
};

// The forward parameters, without `self`.
struct ForwardSignature {
  std::vector<ForwardParameter> parameters;
};

struct KeywordArgument {
  std::string name;
  CallValue value;
};

// `signature` nullptr: no signature could be resolved (fallback order).
std::vector<CallValue> OrderedInputs(const ForwardSignature* signature,
                                     absl::Span<const CallValue> args,
                                     absl::Span<const KeywordArgument> kwargs);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_ORDERED_INPUTS_H_
