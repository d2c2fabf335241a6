#include "torchscan/crawl_support.h"

#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "crawl/strict_failure.h"
#include "report/strict.h"
#include "torchscan/ivalue_metadata.h"
#include "torchscan/version.h"

namespace torchscan {
namespace {

at::Tensor Generate(const std::vector<std::int64_t>& shape,
                    c10::ScalarType dtype, const c10::Device& device) {
  std::vector<std::int64_t> batched = {1};
  batched.insert(batched.end(), shape.begin(), shape.end());
  // As TorchScan 0.2.0: booleans are ones, other integers zeros, floating
  // values uniform in [0, 1) (drawn in float32, then cast).
  if (dtype == c10::ScalarType::Bool) {
    return at::ones(batched, at::TensorOptions().dtype(dtype).device(device));
  }
  if (!c10::isFloatingType(dtype) && !c10::isComplexType(dtype)) {
    return at::zeros(batched, at::TensorOptions().dtype(dtype).device(device));
  }
  return at::rand(batched, at::TensorOptions().device(device)).to(dtype);
}

}  // namespace

std::vector<at::Tensor> Deduplicated(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> unique;
  SeenTensors seen;
  for (const at::Tensor& tensor : tensors) {
    if (seen.Insert(tensor)) unique.push_back(tensor);
  }
  return unique;
}

absl::StatusOr<PreparedInputs> PrepareInputs(
    const CrawlOptions& options, const std::vector<at::Tensor>& parameters,
    const std::vector<at::Tensor>& buffers) {
  const bool provided = options.args.has_value();
  const bool generated = !options.input_shapes.empty();
  if (provided == generated) {
    return absl::InvalidArgumentError(
        "Exactly one of input_shape or args/kwargs must be provided.");
  }
  PreparedInputs prepared;
  if (provided) {
    if (!options.dtypes.empty() || options.device) {
      return absl::InvalidArgumentError(
          "dtype and device apply only to generated input_shape tensors.");
    }
    prepared.args = *options.args;
    prepared.metadata.source = std::string(report::kProvidedInputs);
  } else {
    c10::Device device(c10::DeviceType::CPU);
    c10::ScalarType dtype = c10::ScalarType::Float;
    const std::vector<at::Tensor>& source =
        parameters.empty() ? buffers : parameters;
    if (!source.empty()) {
      device = source.front().device();
      dtype = source.front().scalar_type();
    }
    if (options.device) device = *options.device;
    std::vector<c10::ScalarType> dtypes;
    if (options.dtypes.empty()) {
      dtypes.assign(options.input_shapes.size(), dtype);
    } else if (options.dtypes.size() == 1) {
      dtypes.assign(options.input_shapes.size(), options.dtypes.front());
    } else if (options.dtypes.size() != options.input_shapes.size()) {
      return absl::InvalidArgumentError(
          "dtype length must match the number of input shapes.");
    } else {
      dtypes = options.dtypes;
    }
    for (std::size_t i = 0; i < options.input_shapes.size(); ++i) {
      for (std::int64_t dim : options.input_shapes[i]) {
        if (dim < 0) {
          return absl::InvalidArgumentError(
              "Every input_shape dimension must be a non-negative integer.");
        }
      }
      prepared.args.emplace_back(
          Generate(options.input_shapes[i], dtypes[i], device));
    }
    prepared.metadata.source = std::string(report::kGeneratedInputs);
  }
  prepared.metadata.call = DescribeCall(prepared.args);
  return prepared;
}

report::ModelTensorTotals ModelTotals(const std::vector<at::Tensor>& parameters,
                                      const std::vector<at::Tensor>& buffers) {
  std::int64_t trainable = 0, frozen = 0, parameter_bytes = 0,
               buffer_elements = 0, buffer_bytes = 0;
  for (const at::Tensor& parameter : Deduplicated(parameters)) {
    (parameter.requires_grad() ? trainable : frozen) += parameter.numel();
    parameter_bytes += parameter.numel() * parameter.element_size();
  }
  for (const at::Tensor& buffer : Deduplicated(buffers)) {
    buffer_elements += buffer.numel();
    buffer_bytes += buffer.numel() * buffer.element_size();
  }
  return report::ModelTensorTotals{
      .trainable_parameters = trainable,
      .frozen_parameters = frozen,
      .parameter_bytes = parameter_bytes,
      .buffer_elements = buffer_elements,
      .buffer_bytes = buffer_bytes,
  };
}

report::ReportContext CrawlContext(const std::string& model_type,
                                   bool training_before,
                                   const std::vector<at::Tensor>& parameters,
                                   const std::vector<at::Tensor>& buffers) {
  std::set<std::string> devices, dtypes;
  for (const std::vector<at::Tensor>* tensors : {&parameters, &buffers}) {
    for (const at::Tensor& tensor : *tensors) {
      devices.insert(tensor.device().str());
      dtypes.insert(PythonDtypeName(tensor.scalar_type()));
    }
  }
  report::ReportContext context;
  context.torchscan_version = kVersion;
  context.torch_version = TORCHSCAN_TORCH_FULL_VERSION;
  context.python_version = "";
  context.model_type = model_type;
  context.training_before = training_before;
  context.devices.assign(devices.begin(), devices.end());
  context.dtypes.assign(dtypes.begin(), dtypes.end());
  return context;
}

absl::StatusOr<report::AnalysisReport> FinishCrawl(crawl::CrawlRecord record,
                                                   bool strict) {
  TS_ASSIGN_OR_RETURN(report::AnalysisReport report,
                      crawl::BuildAnalysisReport(std::move(record)));
  if (!strict || !report::IsIncomplete(report)) return report;
  return crawl::StrictFailure(std::move(report));
}

std::optional<report::AnalysisReport> IncompleteAnalysisReport(
    const absl::Status& status) {
  return crawl::StrictFailureReport(status);
}

report::ParameterAttribution LayerTensorCounter::Parameters(
    const std::vector<at::Tensor>& parameters) {
  std::int64_t trainable = 0, frozen = 0, bytes = 0;
  bool shared = false;
  for (const at::Tensor& parameter : parameters) {
    if (!seen_.Insert(parameter)) {
      shared = true;
      continue;
    }
    (parameter.requires_grad() ? trainable : frozen) += parameter.numel();
    bytes += parameter.numel() * parameter.element_size();
  }
  return report::ParameterAttribution{.trainable = trainable,
                                      .frozen = frozen,
                                      .bytes = bytes,
                                      .shared = shared};
}

report::BufferAttribution LayerTensorCounter::Buffers(
    const std::vector<at::Tensor>& buffers) {
  std::int64_t elements = 0, bytes = 0;
  bool shared = false;
  for (const at::Tensor& buffer : buffers) {
    if (!buffer.defined()) continue;
    if (!seen_.Insert(buffer)) {
      shared = true;
      continue;
    }
    elements += buffer.numel();
    bytes += buffer.numel() * buffer.element_size();
  }
  return report::BufferAttribution{
      .elements = elements, .bytes = bytes, .shared = shared};
}

report::LayerReport NewLayerRecord(const std::string& path,
                                   std::int64_t call_index,
                                   const std::string& type,
                                   report::CallMetadata input,
                                   report::ParameterAttribution parameters,
                                   report::BufferAttribution buffers) {
  report::LayerReport layer;
  layer.path = path;
  layer.call_index = call_index;
  layer.name = report::LayerName(path, type);
  layer.depth = report::LayerDepth(path);
  layer.type = type;
  layer.input = std::move(input);
  layer.output = report::ValueMetadata::Pending();
  layer.parameters = parameters;
  layer.buffers = buffers;
  return layer;
}

}  // namespace torchscan
