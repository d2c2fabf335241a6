// crawl_module's layer hooks (crawl_recorder.cc): adds the type
// CrawlRecorder to the library's extension module (hooks_module.cc).

#ifndef TORCHSCAN_PYTHON_OPERATORS_CRAWL_RECORDER_H_
#define TORCHSCAN_PYTHON_OPERATORS_CRAWL_RECORDER_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// False with a Python error set on failure.
bool AddCrawlRecorder(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_CRAWL_RECORDER_H_
