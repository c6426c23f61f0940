// Smoke-test stub of ONNX Runtime's test API (see ../../README.md): declarations only, not ORT's header.
#pragma once

#include <vector>

#include "test/providers/provider_test_utils.h"

namespace onnxruntime {
namespace test {

std::vector<MLFloat16> ToFloat16(const std::vector<float>& data);

}  // namespace test
}  // namespace onnxruntime
