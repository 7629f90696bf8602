// Wire and decoded tensors viewed as at::Tensors without a copy (declared in loader.h).

#include "client/loader.h"  // LibTorch first (see loader.h)

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphstore::client {
namespace {

c10::ScalarType TorchType(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64: return torch::kInt64;
    case v1::DTYPE_INT32: return torch::kInt32;
    case v1::DTYPE_FLOAT32: return torch::kFloat32;
    case v1::DTYPE_FLOAT16: return torch::kFloat16;
    case v1::DTYPE_BFLOAT16: return torch::kBFloat16;
    case v1::DTYPE_FLOAT64: return torch::kFloat64;
    case v1::DTYPE_UINT8: return torch::kUInt8;
    case v1::DTYPE_BOOL: return torch::kBool;
    default: break;
  }
  throw Error(absl::DataLossError(absl::StrCat("tensor has unknown dtype ", static_cast<int>(d))));
}

}  // namespace

at::Tensor ToTensor(const v1::Tensor& t, std::shared_ptr<const void> owner, const MappedBuffer* shared) {
  const c10::ScalarType type = TorchType(t.dtype());
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  auto bytes = TensorBytes(t, shared);
  if (!bytes.ok()) {
    throw Error(absl::Status(bytes.status().code(), absl::StrCat("tensor of shape [", absl::StrJoin(shape, ", "),
                                                                 "]: ", bytes.status().message())));
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return torch::empty(shape, torch::TensorOptions().dtype(type));
  // The bytes stay where protobuf or the mapping put them; the deleter keeps them alive.
  void* data = const_cast<char*>(*bytes);
  return torch::from_blob(data, shape, [owner](void*) mutable { owner.reset(); }, torch::TensorOptions().dtype(type));
}

at::Tensor ToTensor(const DecodedTensor& t) {
  if (!t.defined()) return at::Tensor();
  const c10::ScalarType type = TorchType(t.dtype);
  if (t.bytes == 0) return torch::empty(t.shape, torch::TensorOptions().dtype(type));
  std::shared_ptr<Buffer> buffer = t.buffer;
  return torch::from_blob(t.data, t.shape, [buffer](void*) mutable { buffer.reset(); },
                          torch::TensorOptions().dtype(type));
}

}  // namespace graphstore::client
