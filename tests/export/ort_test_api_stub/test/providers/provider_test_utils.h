// Smoke-test stub of ONNX Runtime's test API (see ../../README.md): declarations only, not ORT's header.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

namespace onnxruntime {

constexpr const char* kMSDomain = "com.microsoft";
constexpr const char* kOnnxDomain = "";
constexpr const char* kCpuExecutionProvider = "CPUExecutionProvider";
constexpr const char* kCudaExecutionProvider = "CUDAExecutionProvider";
constexpr const char* kWebGpuExecutionProvider = "WebGpuExecutionProvider";

struct MLFloat16 {
  MLFloat16() = default;
  explicit MLFloat16(float value);
  uint16_t val{0};
};

class IExecutionProvider {
 public:
  virtual ~IExecutionProvider() = default;
};

struct RunOptions;
enum class ExecutionMode { ORT_SEQUENTIAL = 0, ORT_PARALLEL = 1 };

// ORT's is absl::InlinedVector<int64_t, 5>; a distinct type keeps DimsVariant's overload resolution as ORT's.
class TensorShapeVector : public std::vector<int64_t> {};

namespace test {

class OpTester {
 public:
  using DimsVariant = std::variant<std::vector<int64_t>, TensorShapeVector>;
  enum class ExpectResult { kExpectSuccess, kExpectFailure };

  explicit OpTester(std::string_view op, int opset_version = 7, std::string_view domain = kOnnxDomain,
                    bool verify_output = true);

  template <typename T>
  void AddAttribute(std::string name, T value);

  template <typename T>
  void AddInput(const char* name, std::initializer_list<int64_t> dims, std::initializer_list<T> values,
                bool is_initializer = false, const std::vector<std::string>* dim_params = nullptr);
  template <typename T>
  void AddInput(const char* name, std::initializer_list<int64_t> dims, const std::vector<T>& values,
                bool is_initializer = false, const std::vector<std::string>* dim_params = nullptr);
  template <typename T>
  void AddInput(const char* name, std::initializer_list<int64_t> dims, const T* p_values, const size_t size,
                bool is_initializer = false, const std::vector<std::string>* dim_params = nullptr);
  template <typename T>
  void AddInput(const char* name, const DimsVariant& dims, std::initializer_list<T> values,
                bool is_initializer = false, const std::vector<std::string>* dim_params = nullptr);
  template <typename T>
  void AddInput(const char* name, const DimsVariant& dims, const std::vector<T>& values,
                bool is_initializer = false, const std::vector<std::string>* dim_params = nullptr);
  template <typename T>
  void AddInput(const char* name, const DimsVariant& dims, const T* p_values, const size_t size,
                bool is_initializer = false, const std::vector<std::string>* dim_params = nullptr);

  template <typename T>
  void AddOptionalInputEdge();

  template <typename T>
  void AddOutput(const char* name, std::initializer_list<int64_t> dims, std::initializer_list<T> expected_values,
                 bool sort_output = false, float rel_error = 0.0f, float abs_error = 0.0f);
  template <typename T>
  void AddOutput(const char* name, std::initializer_list<int64_t> dims, const std::vector<T>& expected_values,
                 bool sort_output = false, float rel_error = 0.0f, float abs_error = 0.0f);
  template <typename T>
  void AddOutput(const char* name, std::initializer_list<int64_t> dims, const T* p_values, const size_t size,
                 bool sort_output = false, float rel_error = 0.0f, float abs_error = 0.0f);
  template <typename T>
  void AddOutput(const char* name, const DimsVariant& dims, std::initializer_list<T> expected_values,
                 bool sort_output = false, float rel_error = 0.0f, float abs_error = 0.0f);
  template <typename T>
  void AddOutput(const char* name, const DimsVariant& dims, const std::vector<T>& expected_values,
                 bool sort_output = false, float rel_error = 0.0f, float abs_error = 0.0f);
  template <typename T>
  void AddOutput(const char* name, const DimsVariant& dims, const T* p_values, const size_t size,
                 bool sort_output = false, float rel_error = 0.0f, float abs_error = 0.0f);

  void SetOutputAbsErr(const char* name, float v);
  void SetOutputRelErr(const char* name, float v);

  void Run(ExpectResult expect_result = ExpectResult::kExpectSuccess, const std::string& expected_failure_string = "",
           const std::unordered_set<std::string>& excluded_provider_types = {},
           const RunOptions* run_options = nullptr,
           std::vector<std::unique_ptr<IExecutionProvider>>* execution_providers = nullptr,
           ExecutionMode execution_mode = ExecutionMode::ORT_SEQUENTIAL);
};

}  // namespace test
}  // namespace onnxruntime
