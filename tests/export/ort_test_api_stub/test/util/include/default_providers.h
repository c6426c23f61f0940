// Smoke-test stub of ONNX Runtime's test API (see ../../../README.md): declarations only, not ORT's header.
#pragma once

#include <memory>

#include "test/providers/provider_test_utils.h"

namespace onnxruntime {
namespace test {

// Each returns nullptr when ORT was built without that EP.
std::unique_ptr<IExecutionProvider> DefaultCpuExecutionProvider(bool enable_arena = true);
std::unique_ptr<IExecutionProvider> DefaultCudaExecutionProvider();

}  // namespace test
}  // namespace onnxruntime
